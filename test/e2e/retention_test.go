package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/driver"
)

// storedBytes sums the sizes of the block objects under the tests' key
// prefix in the S3 server's posix backend: what the bucket bills for.
func storedBytes(t *testing.T, s s3Target) int64 {
	t.Helper()
	var n int64
	root := filepath.Join(s.srv.Dir, s.srv.Bucket, "e2e")
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.Contains(filepath.ToSlash(p), "/blocks/") {
			return err
		}
		info, err := e.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatalf("walk bucket: %v", err)
	}
	return n
}

// TestDeleteFreesSpace: a chain with two backups of unrelated data; a
// DeleteSnapshot of the first (what deleting a VolumeSnapshot of a
// Delete-policy class does) makes the driver's background gc, one
// -gc-delay later, delete the blocks only that backup used: the bucket's
// stored bytes shrink by about its size, and the second backup restores.
func TestDeleteFreesSpace(t *testing.T) {
	s3 := startS3(t)
	withTarget := s3.opts(s3.url(""))
	n := startDriver(t, "node-a", func(o *driver.Options) {
		withTarget(o)
		o.GCDelay, o.GCMinAge = 300*time.Millisecond, 0
	})
	vol := createVolume(t, n.Ctrl, "pvc-ret", volSize, mountCap("ext4"), pvcParams("shop", "data"))
	p := stagePublish(t, n.Node, vol.GetVolumeId(), mountCap("ext4"))
	writeTree(t, filepath.Join(p.Path, "one"), 1, 24*mib)
	first := backup(t, n.Ctrl, vol.GetVolumeId(), "snap-1", "")
	if err := os.RemoveAll(filepath.Join(p.Path, "one")); err != nil {
		t.Fatal(err)
	}
	// Commit the journal (ext4 frees blocks at commit), then discard: the
	// loop device punches the freed blocks, so they read as zeros.
	testutil.Run(t, "sync", "-f", p.Path)
	testutil.Run(t, "fstrim", "-v", p.Path)
	writeTree(t, filepath.Join(p.Path, "two"), 2, 8*mib)
	want := hashTree(t, p.Path)
	second := backup(t, n.Ctrl, vol.GetVolumeId(), "snap-2", "")
	unpublishUnstage(t, p)

	before := storedBytes(t, s3)
	if _, err := n.Ctrl.DeleteSnapshot(rpcCtx(t), &csi.DeleteSnapshotRequest{SnapshotId: first}); err != nil {
		t.Fatalf("DeleteSnapshot %s: %v", first, err)
	}
	if now := storedBytes(t, s3); now != before {
		t.Fatalf("stored bytes changed at once (%d -> %d): gc should wait -gc-delay", before, now)
	}
	deadline := time.Now().Add(30 * time.Second)
	after := before
	for time.Now().Before(deadline) {
		if after = storedBytes(t, s3); after < before-16*mib {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("bucket block bytes before the gc %d, after %d", before, after)
	if after >= before-16*mib {
		t.Fatalf("stored bytes %d -> %d: the background gc freed less than the deleted backup's ~24 MiB", before, after)
	}
	v := restore(t, n.Ctrl, restoreReq("pvc-ret-2", second, volSize, mountCap("ext4")))
	rp := stagePublish(t, n.Node, v.GetVolumeId(), mountCap("ext4"))
	sameTree(t, "the remaining backup after gc", rp.Path, want)
	unpublishUnstage(t, rp)
}

// TestBackgroundGCFreesTemps: the driver's background gc (of one chain, a
// -gc-delay after a deletion) also frees, at most hourly, the temporary
// files that writers killed mid-write left in its default file target;
// young ones and objects stay.
func TestBackgroundGCFreesTemps(t *testing.T) {
	n := startDriver(t, "node-a", func(o *driver.Options) {
		o.GCDelay, o.GCMinAge = 200*time.Millisecond, 0
	})
	vol := createVolume(t, n.Ctrl, "pvc-tmp", volSize, mountCap("ext4"), pvcParams("shop", "tmp"))
	snap := backup(t, n.Ctrl, vol.GetVolumeId(), "snap-tmp", "")
	root := filepath.Join(n.Opts.StateDir, "backups", "chains")
	old, young := filepath.Join(root, "killed.json~tmp123"), filepath.Join(root, "young.json~tmp456")
	for _, p := range []string{old, young} {
		if err := os.WriteFile(p, make([]byte, 4096), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Ctrl.DeleteSnapshot(rpcCtx(t), &csi.DeleteSnapshotRequest{SnapshotId: snap}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, err := os.Stat(old); err == nil && time.Now().Before(deadline); _, err = os.Stat(old) {
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(old); err == nil {
		t.Fatalf("%s of a killed writer still there after the background gc", old)
	}
	if _, err := os.Stat(young); err != nil {
		t.Fatalf("a young temporary file went too: %v", err)
	}
}

// TestDeleteLockedBackup: on a target with S3 Object Lock (lock=,
// retain=) DeleteSnapshot of a backup before its retain-until date is
// FailedPrecondition naming the date, and changes nothing: the backup's
// local snapshot (the next incremental's base) stays, and the backup
// restores byte for byte.
func TestDeleteLockedBackup(t *testing.T) {
	s3 := s3TargetOf(t, testutil.StartS3ObjectLock(t))
	n := startDriver(t, "node-a", s3.opts(s3.url("")+"&lock=compliance&retain=1h"))
	vol := createVolume(t, n.Ctrl, "pvc-locked", volSize, mountCap("ext4"), pvcParams("shop", "locked"))
	p := stagePublish(t, n.Node, vol.GetVolumeId(), mountCap("ext4"))
	writeTree(t, filepath.Join(p.Path, "data"), 3, 4*mib)
	want := hashTree(t, p.Path)
	snap := backup(t, n.Ctrl, vol.GetVolumeId(), "snap-locked", "")
	unpublishUnstage(t, p)
	before, err := n.Pool.List(rpcCtx(t), "")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // refused again on a retry: nothing was undone the first time
		_, err := n.Ctrl.DeleteSnapshot(rpcCtx(t), &csi.DeleteSnapshotRequest{SnapshotId: snap})
		if st := status.Convert(err); st.Code() != codes.FailedPrecondition || !strings.Contains(st.Message(), "locked (COMPLIANCE) until 20") {
			t.Fatalf("DeleteSnapshot of a locked backup: %v; want FailedPrecondition naming the date", err)
		}
	}
	if after, _ := n.Pool.List(rpcCtx(t), ""); len(after) != len(before) {
		t.Fatalf("the pool held %d lvols before the refused deletes, %d after: the backup's local snapshot went", len(before), len(after))
	}
	v := restore(t, n.Ctrl, restoreReq("pvc-locked-2", snap, volSize, mountCap("ext4")))
	rp := stagePublish(t, n.Node, v.GetVolumeId(), mountCap("ext4"))
	sameTree(t, "the locked backup after a refused delete", rp.Path, want)
	unpublishUnstage(t, rp)
}
