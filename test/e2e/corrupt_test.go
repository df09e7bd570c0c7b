package e2e

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

// TestCorruptBlock: a byte flipped in a block object of the embedded file
// target makes the restore fail with a final error that names the cause,
// within bounded time, and leaves no volume behind; once the object is
// repaired, the same CreateVolume request succeeds without a new name.
func TestCorruptBlock(t *testing.T) {
	n := startDriver(t, "node-a", noLocalBase) // the restore must read the target
	vol := createVolume(t, n.Ctrl, "victim", volSize, mountCap("ext4"), nil)
	p := stagePublish(t, n.Node, vol.GetVolumeId(), mountCap("ext4"))
	writeTree(t, p.Path, 8, 24*mib)
	unpublishUnstage(t, p)
	id := backup(t, n.Ctrl, vol.GetVolumeId(), "victim-b1", "")
	_, chain, _ := splitBackupID(t, id)

	obj := largestFile(t, filepath.Join(n.Opts.StateDir, "backups", filepath.FromSlash(s3chain.BlockPrefix(chain))))
	flipByte(t, obj)
	t.Logf("flipped a byte of %s", obj)

	start := time.Now()
	_, err := createRestored(t, n.Ctrl, restoreReq("from-corrupt", id, volSize, mountCap("")), 5*time.Second)
	t.Logf("restore of the corrupt backup ended after %v: %v", time.Since(start).Round(time.Millisecond), err)
	wantCode(t, "restore of a corrupt backup", err, codes.FailedPrecondition, "corrupt")
	if _, err := n.Pool.GetByName(rpcCtx(t), backend.KindVolume, "from-corrupt"); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("pool lookup of the failed restore's lvol: %v, want ErrNotFound", err)
	}
	onlyVolumes(t, n, vol.GetVolumeId())

	// A repaired target heals the same request: the next call starts afresh.
	flipByte(t, obj)
	v, err := createRestored(t, n.Ctrl, restoreReq("from-corrupt", id, volSize, mountCap("")), 5*time.Second)
	if err != nil {
		t.Fatalf("restore after repairing the block object: %v", err)
	}
	if v.GetVolumeContext()["fsType"] != "ext4" {
		t.Errorf("healed restore: volume_context %v", v.GetVolumeContext())
	}
}

// largestFile returns the largest regular file under dir.
func largestFile(t *testing.T, dir string) string {
	t.Helper()
	var best string
	var size int64 = -1
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if fi, err := d.Info(); err == nil && fi.Size() > size {
			best, size = p, fi.Size()
		}
		return nil
	})
	if err != nil || best == "" {
		t.Fatalf("no block objects under %s: %v", dir, err)
	}
	return best
}

// flipByte inverts the byte in the middle of a file.
func flipByte(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
