package deploy

import (
	"os"
	"regexp"
	"strings"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// notClasses are the chainvol-* names in the docs that are not classes.
var notClasses = set("chainvol-csi", "chainvol-system", "chainvol-node", "chainvol-node-metrics",
	"chainvol-s3-credentials")

// TestDocsMatchManifests keeps docs/deploy.md from drifting: the sidecar
// versions and retry settings it quotes are the DaemonSet's, and every
// class it names exists under deploy/.
func TestDocsMatchManifests(t *testing.T) {
	b, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	ds, _ := nodeDaemonSet(t)
	spec := &ds.Spec.Template.Spec
	for img, name := range map[string]string{"csi-provisioner": "csi-provisioner", "csi-snapshotter": "csi-snapshotter",
		"csi-resizer": "csi-resizer", "csi-node-driver-registrar": "node-driver-registrar", "livenessprobe": "livenessprobe"} {
		_, tag, _ := strings.Cut(sidecar(t, spec, img).Image, ":")
		if !strings.Contains(doc, name+" "+tag) {
			t.Errorf("docs/deploy.md does not quote %s %s", name, tag)
		}
	}
	for _, img := range []string{"csi-provisioner", "csi-snapshotter"} {
		c := sidecar(t, spec, img)
		for _, f := range []string{"timeout", "retry-interval-max"} {
			if q := "`--" + f + "=" + oneArg(t, c, f) + "`"; !strings.Contains(doc, q) {
				t.Errorf("docs/deploy.md does not quote %s %s", img, q)
			}
		}
	}
	names := map[string]bool{}
	scs, _ := objectsOf[storagev1.StorageClass](t, false)
	for _, sc := range scs {
		names[sc.Name] = true
	}
	vscs, _ := objectsOf[snapv1.VolumeSnapshotClass](t, false)
	for _, c := range vscs {
		names[c.Name] = true
	}
	for _, m := range regexp.MustCompile("`(chainvol-[a-z0-9-]+)`").FindAllStringSubmatch(doc, -1) {
		if notClasses[m[1]] {
			continue
		}
		if !names[m[1]] {
			t.Errorf("docs/deploy.md names class %q, which is not under deploy/", m[1])
		}
	}
}
