package deploy

import (
	"path"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestDriverArgs checks every chainvol-csi container under deploy/, patches
// included: each flag exists in the binary built from this tree, valued
// flags use the unambiguous -name=value form, and every $(VAR) is defined.
func TestDriverArgs(t *testing.T) {
	flags := driverFlags(t)
	base, _ := nodeDaemonSet(t)
	baseDrv := container(&base.Spec.Template.Spec, driverContainer)
	dss, from := objectsOf[appsv1.DaemonSet](t, true)
	for i, ds := range dss {
		c := container(&ds.Spec.Template.Spec, driverContainer)
		if c == nil {
			continue
		}
		env := map[string]bool{}
		for _, e := range c.Env {
			env[e.Name] = true
		}
		if from[i].Patch { // a strategic-merge patch inherits the base env
			for _, e := range baseDrv.Env {
				env[e.Name] = true
			}
		}
		if len(c.Command) != 0 {
			t.Errorf("%s: command overrides the image entrypoint; pass flags as args", from[i])
		}
		for _, a := range c.Args {
			name, _, hasValue, ok := parseArg(a)
			f, known := flags[name]
			switch {
			case !ok:
				t.Errorf("%s: argument %q is not a flag", from[i], a)
			case !known:
				t.Errorf("%s: chainvol-csi has no flag -%s (argument %q)", from[i], name, a)
			case f.Type != "" && !hasValue:
				t.Errorf("%s: write %q as -%s=VALUE", from[i], a, name)
			}
		}
		for _, v := range envRefs(c.Args) {
			if !env[v] {
				t.Errorf("%s: args use $(%s) but the container defines no such env", from[i], v)
			}
		}
		for _, tgt := range argValues(c.Args, "backup-target") {
			if !backupTargetArg.MatchString(tgt) {
				t.Errorf("%s: -backup-target=%q is not NAME=file:///abs or NAME=s3://BUCKET/...", from[i], tgt)
			}
		}
		if from[i].Patch {
			checkPatchKeepsBaseArgs(t, from[i], c, baseDrv)
		}
	}
}

// checkPatchKeepsBaseArgs: a strategic-merge patch replaces the args list
// as a whole, so an overlay that forgets one base argument silently drops it.
func checkPatchKeepsBaseArgs(t *testing.T, m manifest, patch, base *corev1.Container) {
	t.Helper()
	have := map[string]bool{}
	for _, a := range patch.Args {
		have[a] = true
	}
	for _, a := range base.Args {
		if !have[a] {
			t.Errorf("%s: patch drops base argument %q of %s", m, a, base.Name)
		}
	}
}

// TestNodeIdentity checks the driver's node id is the Kubernetes node name,
// which the external-provisioner's node-deployment mode and the topology
// key topology.chainvol.csi.io/node both rely on.
func TestNodeIdentity(t *testing.T) {
	ds, m := nodeDaemonSet(t)
	c := container(&ds.Spec.Template.Spec, driverContainer)
	id := oneArg(t, c, "node-id")
	vars := envRefs([]string{id})
	if len(vars) != 1 || "$("+vars[0]+")" != id {
		t.Fatalf("%s: -node-id=%q, want $(VAR) of the downward API spec.nodeName", m, id)
	}
	requireFieldRef(t, c, vars[0], "spec.nodeName")
	if sc := c.SecurityContext; sc == nil || sc.Privileged == nil || !*sc.Privileged {
		t.Errorf("%s: %s must be privileged (it mounts and attaches loop devices)", m, c.Name)
	}
}

// requireFieldRef fails unless env var name of c comes from the downward
// API field fieldPath.
func requireFieldRef(t *testing.T, c *corev1.Container, name, fieldPath string) {
	t.Helper()
	e := envVar(c, name)
	if e == nil || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != fieldPath {
		t.Errorf("container %s: env %s must come from fieldRef %s, is %+v", c.Name, name, fieldPath, e)
	}
}

// TestHostMounts checks the driver container sees what it works on at the
// paths it works with: kubelet's directory at its host path with
// Bidirectional propagation (kubelet hands the driver host paths, and the
// mounts must reach the pods), the host's /dev, and the pool and state
// directories on hostPath volumes, so volumes and metadata survive the pod.
func TestHostMounts(t *testing.T) {
	flags := driverFlags(t)
	ds, m := nodeDaemonSet(t)
	spec := &ds.Spec.Template.Spec
	c := container(spec, driverContainer)
	for _, p := range []string{"/var/lib/kubelet", "/var/lib/kubelet/pods", "/var/lib/kubelet/plugins", "/dev"} {
		if got := hostPathOf(spec, c, p); got != p {
			t.Errorf("%s: %s in the driver is host path %q, want %q", m, p, got, p)
		}
	}
	if vm, _, _ := mountFor(c, "/var/lib/kubelet/pods"); vm.MountPropagation == nil || *vm.MountPropagation != corev1.MountPropagationBidirectional {
		t.Errorf("%s: the kubelet directory must be mounted with Bidirectional propagation", m)
	}
	for _, name := range []string{"pool-dir", "state-dir"} {
		p := effective(c, flags, name)
		if !path.IsAbs(p) || hostPathOf(spec, c, p) == "" {
			t.Errorf("%s: -%s %q is not on a hostPath volume; its content would die with the pod", m, name, p)
		}
	}
	for _, ctr := range spec.Containers {
		privileged := ctr.SecurityContext != nil && ctr.SecurityContext.Privileged != nil && *ctr.SecurityContext.Privileged
		for _, vm := range ctr.VolumeMounts {
			if volume(spec, vm.Name) == nil {
				t.Errorf("%s: %s mounts undefined volume %q", m, ctr.Name, vm.Name)
			}
			if vm.MountPropagation != nil && *vm.MountPropagation == corev1.MountPropagationBidirectional && !privileged {
				t.Errorf("%s: %s mounts %s Bidirectional but is not privileged (kubelet refuses)", m, ctr.Name, vm.Name)
			}
		}
	}
}

// TestSockets checks every sidecar's --csi-address is the driver's
// -endpoint socket, reached through the same volume, and that the
// registrar tells kubelet the socket's host path.
func TestSockets(t *testing.T) {
	flags := driverFlags(t)
	ds, m := nodeDaemonSet(t)
	spec := &ds.Spec.Template.Spec
	drv := container(spec, driverContainer)
	endpoint := effective(drv, flags, "endpoint")
	sock, isUnix := strings.CutPrefix(endpoint, "unix://")
	if !isUnix || !path.IsAbs(sock) {
		t.Fatalf("%s: -endpoint %q is not unix:///absolute/path", m, endpoint)
	}
	vm, rel, ok := mountFor(drv, sock)
	if !ok || volume(spec, vm.Name) == nil || volume(spec, vm.Name).HostPath == nil {
		t.Fatalf("%s: the driver socket %s is not on a hostPath volume", m, sock)
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		if c.Name == driverContainer || c.Name == keeperContainer {
			continue
		}
		addr := strings.TrimPrefix(oneArg(t, c, "csi-address"), "unix://")
		cvm, crel, ok := mountFor(c, addr)
		if !ok || cvm.Name != vm.Name || crel != rel {
			t.Errorf("%s: %s --csi-address=%s is %s/%s, the driver listens on %s/%s", m, c.Name, addr, cvm.Name, crel, vm.Name, rel)
		}
	}
	reg := sidecar(t, spec, "csi-node-driver-registrar")
	want := path.Join(volume(spec, vm.Name).HostPath.Path, rel)
	if got := oneArg(t, reg, "kubelet-registration-path"); got != want {
		t.Errorf("%s: --kubelet-registration-path=%s, but the socket is %s on the host", m, got, want)
	}
	if got := hostPathOf(spec, reg, "/registration"); got != "/var/lib/kubelet/plugins_registry" {
		t.Errorf("%s: registrar's /registration is host path %q, want kubelet's plugins_registry", m, got)
	}
}

// TestFDKeeper checks the descriptor keeper: a container of its own (a
// restart of the driver's must leave it running) running the driver's
// image as `chainvol-csi keeper` through the image's entrypoint, root but
// unprivileged, listening at -socket where the driver's -fd-keeper looks,
// through the same volume, an emptyDir (the keeper's memory lives as long
// as the pod).
func TestFDKeeper(t *testing.T) {
	ds, m := nodeDaemonSet(t)
	spec := &ds.Spec.Template.Spec
	drv, k := container(spec, driverContainer), container(spec, keeperContainer)
	if k == nil {
		t.Fatalf("%s: no %s container", m, keeperContainer)
	}
	if k.Image != drv.Image || len(k.Command) != 0 || len(k.Args) == 0 || k.Args[0] != "keeper" {
		t.Errorf("%s: %s runs %s %v %v; want the driver's image %s with args keeper ...", m, k.Name, k.Image, k.Command, k.Args, drv.Image)
	}
	sc := k.SecurityContext
	if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 0 || (sc.Privileged != nil && *sc.Privileged) {
		t.Errorf("%s: %s must run as root (runAsUser 0), unprivileged: %+v", m, k.Name, sc)
	}
	sock := oneArg(t, k, "socket")
	want := oneArg(t, drv, "fd-keeper")
	kvm, krel, kok := mountFor(k, sock)
	dvm, drel, dok := mountFor(drv, want)
	if !kok || !dok || kvm.Name != dvm.Name || krel != drel {
		t.Errorf("%s: the keeper listens at %s (%s/%s), the driver's -fd-keeper=%s is %s/%s", m, sock, kvm.Name, krel, want, dvm.Name, drel)
	}
	if v := volume(spec, kvm.Name); v == nil || v.EmptyDir == nil {
		t.Errorf("%s: the keeper's socket volume %q is not an emptyDir", m, kvm.Name)
	}
}
