package deploy

import (
	"path"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// driverContainer is the name of the chainvol-csi container in every pod,
// keeperContainer that of its descriptor keeper (chainvol-csi keeper).
const (
	driverContainer = "chainvol-csi"
	keeperContainer = "fd-keeper"
)

// nodeDaemonSet returns the one complete (non-patch) DaemonSet running
// chainvol-csi, with the manifest it came from.
func nodeDaemonSet(t *testing.T) (*appsv1.DaemonSet, manifest) {
	t.Helper()
	dss, from := objectsOf[appsv1.DaemonSet](t, false)
	var found []int
	for i, ds := range dss {
		if container(&ds.Spec.Template.Spec, driverContainer) != nil {
			found = append(found, i)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want exactly one DaemonSet running %s under deploy/, found %d", driverContainer, len(found))
	}
	return dss[found[0]], from[found[0]]
}

// container returns the named container of a pod spec, or nil.
func container(spec *corev1.PodSpec, name string) *corev1.Container {
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	return nil
}

// sidecar returns the one container whose image is
// registry.k8s.io/sig-storage/<image>:<tag>, failing the test otherwise.
func sidecar(t *testing.T, spec *corev1.PodSpec, image string) *corev1.Container {
	t.Helper()
	var found *corev1.Container
	for i := range spec.Containers {
		repo, _, _ := strings.Cut(spec.Containers[i].Image, ":")
		if repo == "registry.k8s.io/sig-storage/"+image {
			if found != nil {
				t.Fatalf("two %s containers", image)
			}
			found = &spec.Containers[i]
		}
	}
	if found == nil {
		t.Fatalf("no %s sidecar in the node DaemonSet", image)
	}
	return found
}

// parseArg splits "-name=value", "--name=value" or "-name" into its parts.
func parseArg(arg string) (name, value string, hasValue, ok bool) {
	if !strings.HasPrefix(arg, "-") {
		return "", "", false, false
	}
	name, value, hasValue = strings.Cut(strings.TrimLeft(arg, "-"), "=")
	return name, value, hasValue, name != ""
}

// argValues returns every value given to flag name in args, in order; a
// bare boolean "-name" yields "true".
func argValues(args []string, name string) []string {
	var vals []string
	for _, a := range args {
		n, v, has, ok := parseArg(a)
		if ok && n == name {
			if !has {
				v = "true"
			}
			vals = append(vals, v)
		}
	}
	return vals
}

// flagOn reports whether a boolean flag is set to true in args.
func flagOn(args []string, name string) bool {
	vals := argValues(args, name)
	return len(vals) > 0 && vals[len(vals)-1] == "true"
}

// oneArg returns the single value of flag name, failing the test when the
// flag is absent or repeated.
func oneArg(t *testing.T, c *corev1.Container, name string) string {
	t.Helper()
	vals := argValues(c.Args, name)
	if len(vals) != 1 {
		t.Fatalf("container %s: want exactly one --%s, have %q", c.Name, name, vals)
	}
	return vals[0]
}

// effective is the value chainvol-csi will use for a flag: the last one in
// args, else the default its -h printed.
func effective(c *corev1.Container, flags map[string]flagInfo, name string) string {
	if vals := argValues(c.Args, name); len(vals) > 0 {
		return vals[len(vals)-1]
	}
	return flags[name].Default
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// envRefs lists the $(VAR) references kubelet expands in args.
func envRefs(args []string) []string {
	var refs []string
	for _, a := range args {
		for _, m := range envRef.FindAllStringSubmatch(a, -1) {
			refs = append(refs, m[1])
		}
	}
	return refs
}

// envVar returns the named env entry of a container, or nil.
func envVar(c *corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// mountFor finds the container's volume mount that holds path p (the
// longest mountPath that is p or a parent of it) and p relative to it.
func mountFor(c *corev1.Container, p string) (corev1.VolumeMount, string, bool) {
	var best corev1.VolumeMount
	rel, found := "", false
	for _, vm := range c.VolumeMounts {
		mp := path.Clean(vm.MountPath)
		if (p == mp || strings.HasPrefix(p, strings.TrimSuffix(mp, "/")+"/")) && len(mp) > len(best.MountPath) {
			best, rel, found = vm, strings.TrimPrefix(strings.TrimPrefix(p, mp), "/"), true
		}
	}
	return best, rel, found
}

// volume returns the pod volume of that name, or nil.
func volume(spec *corev1.PodSpec, name string) *corev1.Volume {
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			return &spec.Volumes[i]
		}
	}
	return nil
}

// hostPathOf resolves an in-container path to the host path behind it, or
// "" when the path is not on a hostPath volume.
func hostPathOf(spec *corev1.PodSpec, c *corev1.Container, p string) string {
	vm, rel, ok := mountFor(c, p)
	if !ok {
		return ""
	}
	v := volume(spec, vm.Name)
	if v == nil || v.HostPath == nil {
		return ""
	}
	return path.Join(v.HostPath.Path, rel)
}
