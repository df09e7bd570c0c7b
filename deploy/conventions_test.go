package deploy

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// TestSidecarHTTPEndpoints: provisioner, snapshotter and resizer serve
// --http-endpoint on a declared container port (their metrics), and the
// leader-elected resizer is probed on /healthz/leader-election there, so a
// sidecar that stopped renewing its lease is restarted (issue 17).
func TestSidecarHTTPEndpoints(t *testing.T) {
	ds, m := nodeDaemonSet(t)
	spec := &ds.Spec.Template.Spec
	for _, img := range []string{"csi-provisioner", "csi-snapshotter", "csi-resizer"} {
		c := sidecar(t, spec, img)
		ep := oneArg(t, c, "http-endpoint")
		port, ok := strings.CutPrefix(ep, ":")
		if !ok || !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return itoa(p.ContainerPort) == port }) {
			t.Errorf("%s: %s --http-endpoint=%s has no matching container port", m, img, ep)
		}
		if flagOn(c.Args, "leader-election") {
			p := c.LivenessProbe
			if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz/leader-election" || ":"+itoa(int32(portNumber(t, c, p.HTTPGet.Port.String()))) != ep {
				t.Errorf("%s: %s elects a leader but is not probed on /healthz/leader-election of %s", m, img, ep)
			}
		}
	}
	snap := sidecar(t, spec, "csi-snapshotter")
	if !slices.Contains(argValues(snap.Args, "feature-gates"), "CSIVolumeGroupSnapshot=false") {
		t.Errorf("%s: csi-snapshotter must run with --feature-gates=CSIVolumeGroupSnapshot=false (no group snapshots)", m)
	}
}

// TestRBACConventions: no permission the deployment does not use: no
// volumeattachments (attachRequired: false), no group-snapshot resources
// (the feature gate is off), and Secrets never cluster-wide, only through
// Roles in the plugin's namespace (issue 17).
func TestRBACConventions(t *testing.T) {
	croles, from := objectsOf[rbacv1.ClusterRole](t, false)
	for i, r := range croles {
		for _, rule := range r.Rules {
			for _, res := range rule.Resources {
				if res == "secrets" || res == "volumeattachments" || res == "*" {
					t.Errorf("%s: ClusterRole grants %q", from[i], res)
				}
			}
			for _, g := range rule.APIGroups {
				if g == "groupsnapshot.storage.k8s.io" {
					t.Errorf("%s: ClusterRole grants group-snapshot resources; the feature gate is off", from[i])
				}
			}
		}
	}
}

// TestCSIDriverSELinuxMount: the driver supports mounting with -o context
// (it passes mount options through), so kubelet need not relabel volumes.
func TestCSIDriverSELinuxMount(t *testing.T) {
	drivers, from := objectsOf[storagev1.CSIDriver](t, false)
	if len(drivers) == 0 {
		t.Fatal("no CSIDriver under deploy/")
	}
	for i, d := range drivers {
		if d.Spec.SELinuxMount == nil || !*d.Spec.SELinuxMount {
			t.Errorf("%s: seLinuxMount must be true", from[i])
		}
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
