package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/internal/testutil"
)

// TestSnapshotMetadataApply (issue 28): "chainvolctl csi snapshot-metadata
// delta --apply" updates a copy of an older snapshot of an ext4 volume into
// the newer one from the delta alone, reading the changed ranges from a
// block volume made from the newer snapshot (a Filesystem snapshot
// restored as Block): the copy then equals the newer snapshot byte for
// byte, for two local snapshots and for two backups, having copied less
// than the volume; "allocated" prints the ranges of a backup.
func TestSnapshotMetadataApply(t *testing.T) {
	pool := testutil.LoopFS(t, "xfs", 2<<30)
	n := csitest.Start(t, "cli-node", pool, nil)
	dir := t.TempDir()
	c := &ctl{t: t}
	csi := func(args ...string) []string { return append([]string{"csi", "--endpoint", n.Endpoint}, args...) }
	const size = 128 << 20

	vol := strings.TrimSpace(c.ok(csi("volume", "create", "data", "--size", "128Mi", "--fs-type", "ext4", "-q")...))
	stage := filepath.Join(dir, "stage")
	fill := func(names ...string) {
		c.ok(csi("stage", vol, "--staging-path", stage, "--fs-type", "ext4")...)
		for _, name := range names {
			writeRandom(t, filepath.Join(stage, name), 0, 3<<20)
		}
		c.ok(csi("unstage", vol, "--staging-path", stage)...)
	}
	fill("a", "b", "c")
	s1 := strings.TrimSpace(c.ok(csi("snapshot", "create", "s1", "--source", vol, "--wait", "-q")...))
	b1 := strings.TrimSpace(c.ok(csi("snapshot", "create", "b1", "--source", vol, "--param", "backup=true", "--wait", "-q")...))
	fill("b", "d")
	s2 := strings.TrimSpace(c.ok(csi("snapshot", "create", "s2", "--source", vol, "--wait", "-q")...))
	b2 := strings.TrimSpace(c.ok(csi("snapshot", "create", "b2", "--source", vol, "--param", "backup=true", "--wait", "-q")...))
	want := shaN(t, dataFile(t, n, s2), size)

	// The newer snapshot as a Block volume: the ranges' source.
	block := func(name, snap string) string {
		v := strings.TrimSpace(c.ok(csi("volume", "create", name, "--size", "128Mi", "--block", "--from-snapshot", snap, "--wait", "-q")...))
		pub, _ := publishBlock(t, c, csi, v, filepath.Join(dir, name))
		return pub
	}
	apply := func(base, target, src, dst string) {
		t.Helper()
		ans := decode[struct {
			Type     string `json:"blockMetadataType"`
			Capacity int64  `json:"volumeCapacityBytes"`
			Applied  int64  `json:"appliedBytes"`
		}](t, c.ok(csi("snapshot-metadata", "delta", base, target, "--apply", src, dst, "--max-results", "2", "-o", "json")...))
		if ans.Capacity != size || ans.Applied <= 0 || ans.Applied >= size/2 {
			t.Fatalf("delta %s %s --apply: %+v", base, target, ans)
		}
		if got := shaN(t, dst, size); got != want {
			t.Fatalf("the copy of %s updated by the delta to %s (%s, %d bytes applied): sha256 %s, want %s", base, target, ans.Type, ans.Applied, got, want)
		}
		t.Logf("delta %s → %s: %s, %d bytes applied", base, target, ans.Type, ans.Applied)
	}

	localCopy := filepath.Join(dir, "local-copy.img")
	copyFile(t, dataFile(t, n, s1), localCopy)
	apply(s1, s2, block("from-s2", s2), localCopy)

	backupCopy := filepath.Join(dir, "backup-copy.img")
	copyFile(t, block("from-b1", b1), backupCopy)
	if shaN(t, backupCopy, size) != shaN(t, dataFile(t, n, s1), size) {
		t.Fatalf("backup %s restored as a block volume does not hold the filesystem's bytes", b1)
	}
	apply(b1, b2, block("from-b2", b2), backupCopy)

	if out := c.ok(csi("snapshot-metadata", "allocated", b2)...); !strings.Contains(out, "ranges (FIXED_LENGTH)") {
		t.Errorf("allocated %s:\n%s", b2, out)
	}
	if e := c.fails(2, csi("snapshot-metadata", "delta", s1, s2, "--apply", "only-src")...); !strings.Contains(e, "--apply") {
		t.Errorf("--apply with one path: %s", e)
	}
}

// dataFile is the data file of lvol id in n's pool.
func dataFile(t *testing.T, n *csitest.Node, id string) string {
	t.Helper()
	p, err := n.Pool.DataPath(id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// copyFile copies a file or device whole into a new file.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
