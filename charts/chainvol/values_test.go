package chainvol_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// daemonSet returns the rendered DaemonSet and the named container.
func daemonSet(t *testing.T, objs []object, container string) (*appsv1.DaemonSet, *corev1.Container) {
	t.Helper()
	for _, o := range objs {
		if ds, ok := o.Obj.(*appsv1.DaemonSet); ok {
			for i := range ds.Spec.Template.Spec.Containers {
				if c := &ds.Spec.Template.Spec.Containers[i]; c.Name == container {
					return ds, c
				}
			}
			return ds, nil
		}
	}
	t.Fatal("no DaemonSet rendered")
	return nil, nil
}

func hostPath(ds *appsv1.DaemonSet, volume string) string {
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.Name == volume && v.HostPath != nil {
			return v.HostPath.Path
		}
	}
	return ""
}

// TestChartKubeletDir: one value moves every kubelet path (the socket's
// host directory, plugin registration, the mount of the kubelet directory
// at the same path inside the driver, and the registration path), and no
// /var/lib/kubelet is left anywhere (issue 17: it was hard-coded in 3
// places).
func TestChartKubeletDir(t *testing.T) {
	const k = "/var/snap/microk8s/common/var/lib/kubelet"
	objs := render(t, map[string]any{"kubeletDir": k + "/"})
	ds, drv := daemonSet(t, objs, "chainvol-csi")
	if got := hostPath(ds, "socket-dir"); got != k+"/plugins/chainvol.csi.io" {
		t.Errorf("socket-dir %q", got)
	}
	if got := hostPath(ds, "registration-dir"); got != k+"/plugins_registry" {
		t.Errorf("registration-dir %q", got)
	}
	if got := hostPath(ds, "kubelet-dir"); got != k {
		t.Errorf("kubelet-dir %q", got)
	}
	for _, m := range drv.VolumeMounts {
		if m.Name == "kubelet-dir" && m.MountPath != k {
			t.Errorf("kubelet-dir mounted at %q in the driver, want the host path %q", m.MountPath, k)
		}
	}
	_, reg := daemonSet(t, objs, "node-driver-registrar")
	if !slices.Contains(reg.Args, "--kubelet-registration-path="+k+"/plugins/chainvol.csi.io/csi.sock") {
		t.Errorf("registrar args %v", reg.Args)
	}
	rendered := renderText(t, map[string]any{"kubeletDir": k})
	if strings.Contains(strings.ReplaceAll(rendered, k, ""), "/var/lib/kubelet") {
		t.Error("/var/lib/kubelet is still rendered somewhere")
	}
}

// renderText is the rendered YAML of every object, for text searches.
func renderText(t *testing.T, values map[string]any) string {
	t.Helper()
	var b strings.Builder
	for _, o := range render(t, values) {
		js, _ := json.Marshal(o.Obj)
		b.Write(js)
	}
	return b.String()
}

// TestChartValues: image, pool, targets with a credentials Secret and a
// CA ConfigMap, the driver's own kubelet registration in place of the
// registrar and livenessprobe sidecars, sidecar env and images, and the
// IRSA annotation land where the driver and sidecars read them.
func TestChartValues(t *testing.T) {
	objs := render(t, map[string]any{
		"image":    map[string]any{"repository": "registry.example/chainvol", "tag": "v1.2.3"},
		"poolDir":  "/mnt/pool",
		"stateDir": "/mnt/state",
		"logLevel": 4,
		"backup": map[string]any{
			"targets":           []any{map[string]any{"name": "s3", "url": "s3://bkt/c?endpoint=s3.example:443&ca=/etc/chainvol/ca/ca.pem"}},
			"credentialsSecret": "s3-creds", "caConfigMap": "s3-ca",
		},
		"driver":         map[string]any{"kubeletRegistration": true, "extraEnv": []any{map[string]any{"name": "AWS_REGION", "value": "eu-west-1"}}},
		"serviceAccount": map[string]any{"annotations": map[string]any{"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/x"}},
		"sidecars": map[string]any{
			"extraEnv":      []any{map[string]any{"name": "KUBERNETES_SERVICE_PORT", "value": "6443"}},
			"provisioner":   map[string]any{"timeout": "3s", "image": "example/prov:v1"},
			"registrar":     map[string]any{"enabled": false},
			"livenessProbe": map[string]any{"enabled": false},
		},
	})
	ds, drv := daemonSet(t, objs, "chainvol-csi")
	if drv.Image != "registry.example/chainvol:v1.2.3" {
		t.Errorf("image %q", drv.Image)
	}
	for _, want := range []string{"-pool-dir=/mnt/pool", "-state-dir=/mnt/state", "-v=4",
		"-backup-target=s3=s3://bkt/c?endpoint=s3.example:443&ca=/etc/chainvol/ca/ca.pem",
		"-backup-credentials-file=/etc/chainvol/credentials/credentials",
		"-kubelet-registration-path=/var/lib/kubelet/plugins/chainvol.csi.io/csi.sock"} {
		if !slices.Contains(drv.Args, want) {
			t.Errorf("driver args %v lack %s", drv.Args, want)
		}
	}
	mounts := map[string]string{}
	for _, m := range drv.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if mounts["backup-credentials"] != "/etc/chainvol/credentials" || mounts["backup-ca"] != "/etc/chainvol/ca" ||
		mounts["registration-dir"] != "/registration" || mounts["chainvol-dir"] != "/mnt/state" {
		t.Errorf("driver mounts %v", mounts)
	}
	vols := map[string]corev1.Volume{}
	for _, v := range ds.Spec.Template.Spec.Volumes {
		vols[v.Name] = v
	}
	if v := vols["backup-credentials"]; v.Secret == nil || v.Secret.SecretName != "s3-creds" {
		t.Errorf("credentials volume %+v", v)
	}
	if v := vols["backup-ca"]; v.ConfigMap == nil || v.ConfigMap.Name != "s3-ca" {
		t.Errorf("CA volume %+v", v)
	}
	if drv.LivenessProbe != nil {
		t.Error("the driver is probed although the livenessprobe sidecar is off")
	}
	if !slices.ContainsFunc(drv.Env, func(e corev1.EnvVar) bool { return e.Name == "AWS_REGION" }) {
		t.Errorf("driver env %v", drv.Env)
	}
	for _, c := range ds.Spec.Template.Spec.Containers {
		if c.Name == "node-driver-registrar" || c.Name == "liveness-probe" {
			t.Errorf("container %s rendered although disabled", c.Name)
		}
		if strings.HasPrefix(c.Name, "csi-") && !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "KUBERNETES_SERVICE_PORT" }) {
			t.Errorf("%s lacks sidecars.extraEnv", c.Name)
		}
	}
	_, prov := daemonSet(t, objs, "csi-provisioner")
	if prov.Image != "example/prov:v1" || !slices.Contains(prov.Args, "--timeout=3s") {
		t.Errorf("provisioner %s %v", prov.Image, prov.Args)
	}
	for _, o := range objs {
		if sa, ok := o.Obj.(*corev1.ServiceAccount); ok && sa.Name == "chainvol-node" && sa.Annotations["eks.amazonaws.com/role-arn"] == "" {
			t.Error("the ServiceAccount lacks the IRSA annotation")
		}
	}
}

// TestChartMonitoring: the PodMonitor scrapes every metrics port the pod
// declares, and each chainvol_ metric the example alerts use is one the
// driver registers (pkg/driver/metrics*.go), so a renamed metric cannot
// leave an alert that never fires.
func TestChartMonitoring(t *testing.T) {
	objs := render(t, map[string]any{"metrics": map[string]any{
		"podMonitor":     map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}},
		"prometheusRule": map[string]any{"enabled": true, "backupMaxAge": "26h"},
	}})
	ds, _ := daemonSet(t, objs, "chainvol-csi")
	var pm *podMonitor
	var pr *prometheusRule
	for _, o := range objs {
		switch v := o.Obj.(type) {
		case *podMonitor:
			pm = v
		case *prometheusRule:
			pr = v
		}
	}
	if pm == nil || pr == nil {
		t.Fatalf("PodMonitor %v, PrometheusRule %v", pm != nil, pr != nil)
	}
	if pm.Labels["release"] != "prom" {
		t.Errorf("PodMonitor labels %v", pm.Labels)
	}
	ports := map[string]bool{}
	for _, c := range ds.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			ports[p.Name] = true
		}
	}
	for _, e := range pm.Spec.PodMetricsEndpoints {
		if !ports[e.Port] {
			t.Errorf("PodMonitor scrapes port %q, which no container declares", e.Port)
		}
	}
	known := map[string]bool{}
	files, _ := filepath.Glob("../../pkg/driver/metrics*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`"(chainvol_[a-z_]+)"`).FindAllStringSubmatch(string(src), -1) {
			known[m[1]] = true
		}
	}
	if len(files) == 0 {
		t.Fatal("no pkg/driver/metrics*.go")
	}
	used := 0
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if strings.Contains(r.Expr, "{{") {
				t.Errorf("alert %s: unrendered template in %q", r.Alert, r.Expr)
			}
			for _, name := range regexp.MustCompile(`chainvol_[a-z_]+`).FindAllString(r.Expr, -1) {
				used++
				if !known[name] {
					t.Errorf("alert %s uses %s, which pkg/driver/metrics*.go do not register", r.Alert, name)
				}
			}
		}
	}
	if used == 0 {
		t.Error("no alert uses a chainvol metric")
	}
	if !strings.Contains(pr.Spec.Groups[0].Rules[0].Expr, "> 93600") {
		t.Errorf("backupMaxAge 26h should be 93600 s: %s", pr.Spec.Groups[0].Rules[0].Expr)
	}
}

// TestChartGroupSnapshots: off by default (gate false, no group-snapshot
// RBAC, as deploy/base); sidecars.snapshotter.groupSnapshots=true turns
// the gate on and grants the rules together.
func TestChartGroupSnapshots(t *testing.T) {
	for _, on := range []bool{false, true} {
		objs := render(t, map[string]any{"sidecars": map[string]any{"snapshotter": map[string]any{"groupSnapshots": on}}})
		_, snap := daemonSet(t, objs, "csi-snapshotter")
		gate := fmt.Sprintf("--feature-gates=CSIVolumeGroupSnapshot=%v", on)
		if !slices.Contains(snap.Args, gate) {
			t.Errorf("groupSnapshots=%v: snapshotter args %v lack %s", on, snap.Args, gate)
		}
		granted := false
		for _, o := range objs {
			if r, ok := o.Obj.(*rbacv1.ClusterRole); ok {
				for _, rule := range r.Rules {
					granted = granted || slices.Contains(rule.APIGroups, "groupsnapshot.storage.k8s.io")
				}
			}
		}
		if granted != on {
			t.Errorf("groupSnapshots=%v: group-snapshot RBAC granted=%v", on, granted)
		}
	}
}
