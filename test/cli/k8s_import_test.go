package cli

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/chainvol/chainvol/internal/testutil"
)

// strictDocs splits a YAML stream and decodes each document strictly (an
// unknown field fails) into the external-snapshotter v8 type of its kind.
func strictDocs(t *testing.T, out string) ([]snapv1.VolumeSnapshotContent, []snapv1.VolumeSnapshot) {
	t.Helper()
	var contents []snapv1.VolumeSnapshotContent
	var snaps []snapv1.VolumeSnapshot
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(out)))
	for {
		doc, err := r.Read()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var meta struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil || meta.APIVersion != "snapshot.storage.k8s.io/v1" {
			t.Fatalf("document %q: apiVersion %q, %v", doc, meta.APIVersion, err)
		}
		switch meta.Kind {
		case "VolumeSnapshotContent":
			var c snapv1.VolumeSnapshotContent
			if err := yaml.UnmarshalStrict(doc, &c); err != nil {
				t.Fatalf("strict decode of a content: %v\n%s", err, doc)
			}
			contents = append(contents, c)
		case "VolumeSnapshot":
			var s snapv1.VolumeSnapshot
			if err := yaml.UnmarshalStrict(doc, &s); err != nil {
				t.Fatalf("strict decode of a snapshot: %v\n%s", err, doc)
			}
			snaps = append(snaps, s)
		default:
			t.Fatalf("unexpected kind %q", meta.Kind)
		}
	}
	return contents, snaps
}

// TestK8sImport: three backups in two chains on a real S3 target;
// "k8s import" writes for the backups at or before T (given in a +05:30
// zone) of the chosen chain a content + snapshot pair each with the
// handle backup:s3:CHAIN@ID, the driver, the deletion policy, the
// managed-by label and the mapped namespace.
func TestK8sImport(t *testing.T) {
	srv := testutil.StartS3(t)
	dir := t.TempDir()
	c := &ctl{t: t, secrets: []string{srv.SecretKey}}
	c.env = []string{"CHAINVOL_TARGETS=s3=" + srv.URL("imp"), "CHAINVOL_ACCESS_KEY_ID=" + srv.AccessKey,
		"CHAINVOL_SECRET_ACCESS_KEY=" + srv.SecretKey}
	g := []string{"--state-dir", filepath.Join(dir, "state")}
	img := makeImage(t, dir)
	c.ok(append(g, "backup", "create", "--from", img, "--chain", "shop/data-db-0", "--id", "20261129T100000Z")...)
	c.ok(append(g, "backup", "create", "--from", img, "--chain", "shop/data-db-1", "--id", "20261129T100001Z")...)
	time.Sleep(50 * time.Millisecond)
	between := time.Now().In(time.FixedZone("IST", 5*3600+1800)).Format(time.RFC3339Nano)
	time.Sleep(50 * time.Millisecond)
	c.ok(append(g, "backup", "create", "--from", img, "--chain", "shop/data-db-0", "--id", "20261129T110000Z")...)

	out := c.ok(append(g, "k8s", "import", "--chain", "shop/data-db-0", "--before", between,
		"--namespace-map", "shop=shop-restore", "--managed-by", "node-a", "--deletion-policy", "Delete")...)
	contents, snaps := strictDocs(t, out)
	if len(contents) != 1 || len(snaps) != 1 {
		t.Fatalf("got %d contents and %d snapshots, want the one first-round backup of shop/data-db-0:\n%s", len(contents), len(snaps), out)
	}
	ct, s := contents[0], snaps[0]
	if h := ct.Spec.Source.SnapshotHandle; h == nil || *h != "backup:s3:shop/data-db-0@20261129T100000Z" {
		t.Errorf("snapshotHandle %v, want backup:s3:shop/data-db-0@20261129T100000Z", h)
	}
	if ct.Spec.Driver != "chainvol.csi.io" || ct.Spec.DeletionPolicy != snapv1.VolumeSnapshotContentDelete {
		t.Errorf("driver %q deletionPolicy %q", ct.Spec.Driver, ct.Spec.DeletionPolicy)
	}
	if ct.Labels["snapshot.storage.kubernetes.io/managed-by"] != "node-a" {
		t.Errorf("content labels %v lack managed-by=node-a", ct.Labels)
	}
	if ct.Spec.SourceVolumeMode == nil {
		t.Errorf("content has no sourceVolumeMode")
	}
	ref := ct.Spec.VolumeSnapshotRef
	if ref.Namespace != "shop-restore" || ref.Name != s.Name || s.Namespace != "shop-restore" {
		t.Errorf("content ref %s/%s, snapshot %s/%s: want both in shop-restore and bound", ref.Namespace, ref.Name, s.Namespace, s.Name)
	}
	if n := s.Spec.Source.VolumeSnapshotContentName; n == nil || *n != ct.Name || s.Spec.Source.PersistentVolumeClaimName != nil {
		t.Errorf("snapshot source %+v, want content %s", s.Spec.Source, ct.Name)
	}
	if s.Name != "data-db-0-20261129t100000z" {
		t.Errorf("snapshot name %q", s.Name)
	}
	again := c.ok(append(g, "k8s", "import", "--chain", "shop/data-db-0", "--before", between,
		"--namespace-map", "shop=shop-restore", "--managed-by", "node-a", "--deletion-policy", "Delete")...)
	if again != out {
		t.Errorf("a second import differs: objects must be deterministic")
	}

	all, _ := strictDocs(t, c.ok(append(g, "k8s", "import", "--managed-by", "node-a")...))
	if len(all) != 3 || all[0].Spec.DeletionPolicy != snapv1.VolumeSnapshotContentRetain {
		t.Errorf("import of everything: %d contents (want 3), policy %q (want the default Retain)", len(all), all[0].Spec.DeletionPolicy)
	}
	after, _ := strictDocs(t, c.ok(append(g, "k8s", "import", "--after", between, "--managed-by", "node-a")...))
	if len(after) != 1 || !strings.HasSuffix(*after[0].Spec.Source.SnapshotHandle, "@20261129T110000Z") {
		t.Errorf("--after: %d contents, want the second-round one", len(after))
	}
	for _, bad := range [][]string{
		{"--before", "2026-11-29"},
		{"--deletion-policy", "Keep"},
		{"--namespace-map", "shop"},
	} {
		c.fails(2, append(append(g, "k8s", "import"), bad...)...)
	}
	// A chain that is not NAMESPACE/NAME cannot be placed: a usage error naming the fix.
	c.ok(append(g, "backup", "create", "--from", img, "--chain", "_volume/pvc-1")...)
	if e := c.fails(2, append(g, "k8s", "import", "--chain", "_volume/pvc-1")...); !strings.Contains(e, "--namespace-map _volume=") {
		t.Errorf("unplaceable chain: %s", e)
	}
	ok, _ := strictDocs(t, c.ok(append(g, "k8s", "import", "--chain", "_volume/pvc-1", "--namespace-map", "_volume=orphans", "--managed-by", "n")...))
	if len(ok) != 1 || ok[0].Spec.VolumeSnapshotRef.Namespace != "orphans" {
		t.Errorf("mapped _volume chain: %+v", ok)
	}
	_ = os.Remove(img)
}

// TestK8sImportNamesApart (issue 24): backups whose chain names or ids
// differ only where the lower-case name folds (db_0 and db-0, Nightly and
// nightly, a@b-c and a-b@c) get distinct VolumeSnapshots, each bound to
// the content of its own backup's handle; a --namespace-map that merges two
// namespaces into one name is refused before anything is written.
func TestK8sImportNamesApart(t *testing.T) {
	srv := testutil.StartS3(t)
	dir := t.TempDir()
	c := &ctl{t: t, secrets: []string{srv.SecretKey}}
	c.env = []string{"CHAINVOL_TARGETS=s3=" + srv.URL("names"), "CHAINVOL_ACCESS_KEY_ID=" + srv.AccessKey,
		"CHAINVOL_SECRET_ACCESS_KEY=" + srv.SecretKey}
	g := []string{"--state-dir", filepath.Join(dir, "state")}
	img := makeImage(t, dir)
	backups := [][2]string{{"shop/db_0", "20261129T100000Z"}, {"shop/db-0", "20261129T100000Z"},
		{"shop/db", "Nightly"}, {"shop/db", "nightly"}, {"shop/a", "b-c"}, {"shop/a-b", "c"}}
	for _, b := range backups {
		c.ok(append(g, "backup", "create", "--from", img, "--chain", b[0], "--id", b[1])...)
	}
	contents, snaps := strictDocs(t, c.ok(append(g, "k8s", "import", "--managed-by", "n")...))
	if len(contents) != len(backups) || len(snaps) != len(backups) {
		t.Fatalf("%d contents, %d snapshots for %d backups", len(contents), len(snaps), len(backups))
	}
	handleOf := map[string]string{}
	for _, ct := range contents {
		handleOf[ct.Name] = *ct.Spec.Source.SnapshotHandle
	}
	names := map[string]string{}
	for _, s := range snaps {
		h := handleOf[*s.Spec.Source.VolumeSnapshotContentName]
		if o, ok := names[s.Name]; ok {
			t.Errorf("%s and %s share volumesnapshot %s", o, h, s.Name)
		}
		names[s.Name] = h
		if want := "backup:" + s.Annotations["chainvol.csi.io/backup"]; h != want {
			t.Errorf("volumesnapshot %s restores %s, but is annotated %s", s.Name, h, want)
		}
	}
	c.ok(append(g, "backup", "create", "--from", img, "--chain", "lab/db_0", "--id", "20261129T100000Z")...)
	c.ok(append(g, "backup", "create", "--from", img, "--chain", "lab/db-0", "--id", "20261129T100000Z")...)
	c.ok(append(g, "backup", "create", "--from", img, "--chain", "lab/data", "--id", "20261129T100000Z")...)
	c.ok(append(g, "backup", "create", "--from", img, "--chain", "shop/data", "--id", "20261129T100000Z")...)
	e := c.fails(2, append(g, "k8s", "import", "--chain", "shop/data", "--chain", "lab/data", "--namespace-map", "shop=dr", "--namespace-map", "lab=dr")...)
	if !strings.Contains(e, "s3:lab/data@20261129T100000Z") || !strings.Contains(e, "s3:shop/data@20261129T100000Z") || !strings.Contains(e, "dr/data-20261129t100000z") {
		t.Errorf("merged namespaces: %s", e)
	}
	// Hashed names carry the chain's namespace: merged, they stay apart.
	_, merged := strictDocs(t, c.ok(append(g, "k8s", "import", "--chain", "shop/db_0", "--chain", "lab/db_0", "--namespace-map", "shop=dr", "--namespace-map", "lab=dr", "--managed-by", "n")...))
	if len(merged) != 2 || merged[0].Name == merged[1].Name {
		t.Errorf("hashed names of merged namespaces: %+v", merged)
	}
	_ = os.Remove(img)
}
