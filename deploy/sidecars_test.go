package deploy

import (
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

var pinnedTag = regexp.MustCompile(`^v\d+\.\d+\.\d+$`)

// TestSidecarModes checks each sidecar runs in the mode a per-node
// DaemonSet needs: provisioner and snapshotter act only for their own node
// (no leader election), the resizer elects one leader, and the provisioner
// publishes capacity owned by its pod and polls restores often.
func TestSidecarModes(t *testing.T) {
	ds, m := nodeDaemonSet(t)
	spec := &ds.Spec.Template.Spec
	for _, img := range []string{"csi-provisioner", "csi-snapshotter", "csi-resizer", "csi-node-driver-registrar", "livenessprobe"} {
		c := sidecar(t, spec, img)
		if _, tag, _ := strings.Cut(c.Image, ":"); !pinnedTag.MatchString(tag) {
			t.Errorf("%s: %s image %q is not pinned to a release vX.Y.Z", m, img, c.Image)
		}
	}

	prov := sidecar(t, spec, "csi-provisioner")
	for _, f := range []string{"node-deployment", "extra-create-metadata", "enable-capacity", "strict-topology"} {
		if !flagOn(prov.Args, f) {
			t.Errorf("%s: csi-provisioner needs --%s", m, f)
		}
	}
	if fg := oneArg(t, prov, "feature-gates"); !strings.Contains(fg, "Topology=true") {
		t.Errorf("%s: csi-provisioner --feature-gates=%s lacks Topology=true", m, fg)
	}
	if lvl := oneArg(t, prov, "capacity-ownerref-level"); lvl != "0" {
		t.Errorf("%s: --capacity-ownerref-level=%s; a DaemonSet pod should own its node's capacity objects (0)", m, lvl)
	}
	requireFieldRef(t, prov, "NODE_NAME", "spec.nodeName")
	requireFieldRef(t, prov, "POD_NAME", "metadata.name")
	requireFieldRef(t, prov, "NAMESPACE", "metadata.namespace")
	checkPolling(t, m.String(), prov, 10*time.Second, 2*time.Minute)

	snap := sidecar(t, spec, "csi-snapshotter")
	if !flagOn(snap.Args, "node-deployment") {
		t.Errorf("%s: csi-snapshotter needs --node-deployment", m)
	}
	requireFieldRef(t, snap, "NODE_NAME", "spec.nodeName")
	checkPolling(t, m.String(), snap, 10*time.Second, 5*time.Minute)

	for _, c := range []*corev1.Container{prov, snap} {
		if flagOn(c.Args, "leader-election") {
			t.Errorf("%s: %s runs per node and must not elect a leader", m, c.Name)
		}
	}
	if res := sidecar(t, spec, "csi-resizer"); !flagOn(res.Args, "leader-election") {
		t.Errorf("%s: csi-resizer has no per-node mode; it needs --leader-election", m)
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		for _, v := range envRefs(c.Args) {
			if envVar(c, v) == nil {
				t.Errorf("%s: %s uses $(%s) without defining it", m, c.Name, v)
			}
		}
	}
}

// checkPolling requires --timeout within [minTimeout, maxTimeout] and a
// --retry-interval-max of at most 10s, so a finished restore or backup is
// noticed within seconds rather than after the sidecars' 5-minute default.
func checkPolling(t *testing.T, where string, c *corev1.Container, minTimeout, maxTimeout time.Duration) {
	t.Helper()
	timeout, err := time.ParseDuration(oneArg(t, c, "timeout"))
	if err != nil || timeout < minTimeout || timeout > maxTimeout {
		t.Errorf("%s: %s --timeout=%v (%v), want %v..%v", where, c.Name, timeout, err, minTimeout, maxTimeout)
	}
	retry, err := time.ParseDuration(oneArg(t, c, "retry-interval-max"))
	if err != nil || retry <= 0 || retry > 10*time.Second {
		t.Errorf("%s: %s --retry-interval-max=%v (%v), want at most 10s", where, c.Name, retry, err)
	}
}

// TestProbesAndMetrics checks the driver's liveness probe hits the port the
// livenessprobe sidecar serves, container ports are unique in the pod, and
// the metrics Service selects these pods on the port -metrics-address opens.
func TestProbesAndMetrics(t *testing.T) {
	flags := driverFlags(t)
	ds, m := nodeDaemonSet(t)
	spec := &ds.Spec.Template.Spec
	drv := container(spec, driverContainer)
	lp := sidecar(t, spec, "livenessprobe")
	if drv.LivenessProbe == nil || drv.LivenessProbe.HTTPGet == nil {
		t.Fatalf("%s: %s has no HTTP liveness probe", m, drv.Name)
	}
	if got, want := portNumber(t, drv, drv.LivenessProbe.HTTPGet.Port.String()), oneArg(t, lp, "http-endpoint"); ":"+strconv.Itoa(got) != want {
		t.Errorf("%s: liveness probe on port %d, livenessprobe serves --http-endpoint=%s", m, got, want)
	}
	if len(argValues(lp.Args, "health-port")) > 0 {
		t.Errorf("%s: livenessprobe's --health-port is deprecated; use --http-endpoint", m)
	}
	seen := map[int32]string{}
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if other, dup := seen[p.ContainerPort]; dup {
				t.Errorf("%s: port %d declared by %s and %s", m, p.ContainerPort, other, c.Name)
			}
			seen[p.ContainerPort] = c.Name
		}
	}
	_, portStr, err := net.SplitHostPort(effective(drv, flags, "metrics-address"))
	if err != nil {
		t.Fatalf("%s: -metrics-address: %v", m, err)
	}
	metricsPort, _ := strconv.Atoi(portStr)
	if portNumber(t, drv, "metrics") != metricsPort {
		t.Errorf("%s: container port \"metrics\" is not -metrics-address port %d", m, metricsPort)
	}
	svcs, from := objectsOf[corev1.Service](t, false)
	matched := 0
	for i, s := range svcs {
		if s.Namespace != ds.Namespace || len(s.Spec.Selector) == 0 ||
			!labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(ds.Spec.Template.Labels)) {
			continue
		}
		for _, p := range s.Spec.Ports {
			if portNumber(t, drv, p.TargetPort.String()) == metricsPort {
				matched++
			}
		}
		if s.Spec.ClusterIP != corev1.ClusterIPNone {
			t.Errorf("%s: metrics Service should be headless, so each node's pod is scraped", from[i])
		}
	}
	if matched != 1 {
		t.Errorf("%d Service ports reach the driver's metrics port %d, want 1", matched, metricsPort)
	}
}

// portNumber resolves a port given by number or by the container's port
// name; 0 when it resolves to nothing.
func portNumber(t *testing.T, c *corev1.Container, port string) int {
	t.Helper()
	if n, err := strconv.Atoi(port); err == nil {
		return n
	}
	for _, p := range c.Ports {
		if p.Name == port {
			return int(p.ContainerPort)
		}
	}
	return 0
}
