package chainvol_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestChartFDKeeper: by default the node pod runs the fd-keeper container
// (the driver's image, `keeper -socket=SOCK`, root, unprivileged) and the
// driver gets -fd-keeper=SOCK, both containers mounting the same emptyDir
// at SOCK's directory; driver.fdKeeper.enabled=false renders none of it
// (no container, flag, mount or volume), and its resources are the
// keeper's.
func TestChartFDKeeper(t *testing.T) {
	const sock = "/var/lib/chainvol-keeper/keeper.sock"
	mounts := func(c *corev1.Container) string {
		for _, m := range c.VolumeMounts {
			if m.Name == "fd-keeper-dir" {
				return m.MountPath
			}
		}
		return ""
	}

	objs := render(t, map[string]any{"driver": map[string]any{"fdKeeper": map[string]any{
		"resources": map[string]any{"requests": map[string]any{"memory": "24Mi"}}}}})
	ds, drv := daemonSet(t, objs, "chainvol-csi")
	_, k := daemonSet(t, objs, "fd-keeper")
	if k == nil {
		t.Fatal("no fd-keeper container by default")
	}
	if k.Image != drv.Image || len(k.Command) != 0 || !slices.Equal(k.Args[:2], []string{"keeper", "-socket=" + sock}) {
		t.Errorf("fd-keeper runs %s %v %v; want %s, args keeper -socket=%s", k.Image, k.Command, k.Args, drv.Image, sock)
	}
	if sc := k.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 0 || sc.Privileged != nil {
		t.Errorf("fd-keeper securityContext %+v; want root, not privileged", sc)
	}
	if got := k.Resources.Requests.Memory().String(); got != "24Mi" {
		t.Errorf("fd-keeper memory request %s, want driver.fdKeeper.resources' 24Mi", got)
	}
	if !slices.Contains(drv.Args, "-fd-keeper="+sock) {
		t.Errorf("driver args %v lack -fd-keeper=%s", drv.Args, sock)
	}
	for _, c := range []*corev1.Container{drv, k} {
		if got := mounts(c); got != "/var/lib/chainvol-keeper" {
			t.Errorf("%s mounts fd-keeper-dir at %q", c.Name, got)
		}
	}
	if i := slices.IndexFunc(ds.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "fd-keeper-dir" }); i < 0 ||
		ds.Spec.Template.Spec.Volumes[i].EmptyDir == nil {
		t.Error("no emptyDir volume fd-keeper-dir")
	}

	objs = render(t, map[string]any{"driver": map[string]any{"fdKeeper": map[string]any{"enabled": false}}})
	if _, k := daemonSet(t, objs, "fd-keeper"); k != nil {
		t.Error("fd-keeper rendered although disabled")
	}
	if strings.Contains(renderText(t, map[string]any{"driver": map[string]any{"fdKeeper": map[string]any{"enabled": false}}}), "keeper") {
		t.Error("disabled: a keeper flag, mount or volume is still rendered")
	}

	if err := validate(t, map[string]any{"driver": map[string]any{"fdKeeper": map[string]any{"enable": false}}}); err == nil ||
		!strings.Contains(err.Error(), "/driver/fdKeeper") {
		t.Errorf("misspelt driver.fdKeeper.enable: %v; want a refusal naming /driver/fdKeeper", err)
	}
}
