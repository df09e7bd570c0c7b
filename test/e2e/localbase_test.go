package e2e

import (
	"context"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/pkg/driver"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// TestRestoreFromLocalBase: a node holding the local snapshot of a backup
// restores other backups of the same chain starting from a reflink of it
// (issue 16), byte-identical to the backup: rolling back to an earlier
// backup (a region zeroed since must come back), the same backup again,
// and a backup made elsewhere after the snapshot's own backup and every
// older one were deleted from the target (the snapshot is then older than
// the chain's oldest backup and only the node's record of its image says
// what it holds). That last restore runs with the block objects it shares
// with the snapshot deleted from the target, so it succeeds only if it
// takes them from the snapshot; a region zeroed in that backup but holding
// data in the snapshot must read as zeros.
func TestRestoreFromLocalBase(t *testing.T) {
	s3 := startS3(t)
	url := s3.url("")
	n := startDriver(t, "node-a", s3.opts(url))
	repo := openRepo(t, url, s3.creds)
	ctx := context.Background()
	const size = 256 * mib

	vol := createVolume(t, n.Ctrl, "lb-src", size, blockCap(), nil)
	p := stagePublish(t, n.Node, vol.GetVolumeId(), blockCap())
	writeDevice(t, p.Path, 1, []int64{0, 16 * mib, 64 * mib, 128 * mib}, int(12*mib))
	want1 := hashDevice(t, p.Path)
	id1 := backup(t, n.Ctrl, vol.GetVolumeId(), "lb-b1", offsite)
	writeDevice(t, p.Path, 2, []int64{20 * mib}, int(mib))
	writeZeros(t, p.Path, 64*mib, 8*mib) // data in b1, zero in b2
	want2 := hashDevice(t, p.Path)
	id2 := backup(t, n.Ctrl, vol.GetVolumeId(), "lb-b2", offsite)
	unpublishUnstage(t, p)
	_, chain, b1 := splitBackupID(t, id1)
	_, _, b2 := splitBackupID(t, id2)

	restoredIs(t, n, "lb-rollback", id1, size, want1) // from b2's snapshot
	restoredIs(t, n, "lb-again", id2, size, want2)

	// b3, made elsewhere (the library, as another node would), from b2's
	// image with one changed region and b2's data at 0 zeroed.
	im2, err := repo.Image(ctx, chain, b2)
	if err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(t.TempDir(), "img")
	if _, _, err := repo.Restore(ctx, s3chain.RestoreOptions{Chain: chain, BackupID: b2, Destination: img}); err != nil {
		t.Fatal(err)
	}
	writeDevice(t, img, 3, []int64{130 * mib}, int(mib))
	writeZeros(t, img, 0, 4*mib)
	want3 := hashFile(t, img)
	m3, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: img, Parent: b2, VolumeMode: s3chain.VolumeModeBlock})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{b1, b2} {
		if err := repo.DeleteBackup(ctx, chain, b); err != nil {
			t.Fatalf("delete backup %s: %v", b, err)
		}
	}
	if k := deleteShared(t, s3, url, repo, chain, m3.ID, im2); k == 0 {
		t.Fatal("b3 shares no block object with b2")
	}
	restoredIs(t, n, "lb-older", "backup:"+offsite+":"+chain+"@"+m3.ID, size, want3)
}

// deleteShared deletes from the target the block objects of backup id
// that only the blocks it shares with base (same index, same digest) use,
// and returns how many it deleted.
func deleteShared(t *testing.T, s3 s3Target, url string, repo *s3chain.Repo, chain, id string, base *s3chain.Image) int {
	t.Helper()
	ctx := context.Background()
	im, err := repo.Image(ctx, chain, id)
	if err != nil {
		t.Fatal(err)
	}
	at := map[int64]string{}
	for _, b := range base.Blocks {
		at[b.Index] = b.Digest
	}
	shared, needed := map[string]bool{}, map[string]bool{}
	for _, b := range im.Blocks {
		if at[b.Index] == b.Digest {
			shared[b.Digest] = true
		} else {
			needed[b.Digest] = true
		}
	}
	store, err := store.Open(ctx, url, store.Credentials{AccessKeyID: s3.srv.AccessKey, SecretAccessKey: s3.srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for d := range shared {
		if !needed[d] {
			if err := store.Delete(ctx, s3chain.BlockKey(chain, d)); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	return n
}

// noLocalBase configures a driver whose restores read every block from
// the target (driver.Options.NoLocalBase), for tests of target faults: on
// the node that made a backup, a restore of it would otherwise need no
// block from the target at all.
func noLocalBase(o *driver.Options) { o.NoLocalBase = true }

// both applies two driver configurations.
func both(a, b func(*driver.Options)) func(*driver.Options) {
	return func(o *driver.Options) { a(o); b(o) }
}

// restoredIs restores snapID as a new block volume called name on n and
// checks that its bytes hash to want.
func restoredIs(t *testing.T, n *csitest.Node, name, snapID string, size int64, want [32]byte) {
	t.Helper()
	v := restore(t, n.Ctrl, restoreReq(name, snapID, size, blockCap()))
	rp := stagePublish(t, n.Node, v.GetVolumeId(), blockCap())
	if got := hashDevice(t, rp.Path); got != want {
		t.Errorf("restore %s of %s: sha256 %x, want %x", name, snapID, got, want)
	}
	unpublishUnstage(t, rp)
}

// writeZeros writes n zero bytes at off of the device or file at path.
func writeZeros(t *testing.T, path string, off, n int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, n), off); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// hashFile is the sha256 of a whole file.
func hashFile(t *testing.T, path string) [32]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	var s [32]byte
	h.Sum(s[:0])
	return s
}
