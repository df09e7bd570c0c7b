package s3chain_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// TestRoundTripReflink backs up a volume on a real reflink XFS (full, then
// ten incrementals from FIEMAP changed-block tracking) to the local file
// target and, encrypted, to a real S3 server, and restores every backup
// byte for byte.
func TestRoundTripReflink(t *testing.T) {
	mnt := testutil.LoopFS(t, "xfs", 1<<30)
	srv := testutil.StartS3(t)
	ctx := context.Background()
	if err := os.Mkdir(filepath.Join(mnt, "repo"), 0o700); err != nil {
		t.Fatal(err)
	}
	fileStore, err := store.Open(ctx, "file://"+filepath.Join(mnt, "repo"), store.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	s3Store, err := store.Open(ctx, srv.URL("backups"), store.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	repos := map[string]*s3chain.Repo{"file": newRepo(t, fileStore, nil), "s3": newRepo(t, s3Store, testKey(1))}

	const size, bs = 64 << 20, 1 << 20
	vol := newTestVolume(t, mnt, size, bs, 1)
	var snaps, ids []string
	var shas []string
	for k := 0; k <= 10; k++ {
		var touched map[int64]bool
		if k > 0 {
			touched = vol.change(6, 200<<10)
		}
		snap := filepath.Join(mnt, fmt.Sprintf("snap%02d", k))
		vol.snapshot(snap, true)
		shas = append(shas, fileSHA(t, snap, size))
		for name, r := range repos {
			o := s3chain.BackupOptions{Chain: "ns/vol-a", Source: snap, BlockSize: bs, VolumeMode: "Filesystem",
				FSType: "xfs", SourceVolume: "pvc-1", Node: "node-1", BackupID: fmt.Sprintf("b%02d", k)}
			if k > 0 {
				o.Parent, o.Base = ids[k-1], snaps[k-1]
			}
			m, st, err := r.Backup(ctx, o)
			if err != nil {
				t.Fatalf("%s backup %d: %v", name, k, err)
			}
			if k == 0 {
				checkFull(t, m, st)
				continue
			}
			// FIEMAP tracking reads about the touched blocks (XFS copies on
			// write in whole 4 KiB pages, so a neighbour may show up) and
			// uploads only blocks that really changed.
			t.Logf("%s backup %d: %d blocks touched; scanned %d, uploaded %d, stored %d bytes, %d zero, %d dedup, %v", name, k, len(touched), st.ScannedBytes, st.UploadedBytes, st.StoredBytes, st.ZeroBlocks, st.DedupBlocks, st.Duration)
			maxBytes := int64(len(touched)) * bs
			if st.ScannedBytes > maxBytes+2*bs || st.UploadedBytes > maxBytes || st.ChangedBytes > maxBytes {
				t.Errorf("%s backup %d: scanned %d, uploaded %d, changed %d bytes; %d blocks touched", name, k, st.ScannedBytes, st.UploadedBytes, st.ChangedBytes, len(touched))
			}
			if m.ParentID != ids[k-1] || m.FSType != "xfs" {
				t.Errorf("%s backup %d: parent %q fstype %q", name, k, m.ParentID, m.FSType)
			}
		}
		snaps, ids = append(snaps, snap), append(ids, fmt.Sprintf("b%02d", k))
	}
	for name, r := range repos {
		for k, id := range ids {
			got, m, _ := restoreSHA(t, r, "ns/vol-a", id, mnt)
			if got != shas[k] {
				t.Errorf("%s: restore of %s: sha256 %s, snapshot had %s", name, id, got, shas[k])
			}
			if m.SizeBytes != size {
				t.Errorf("%s: restored size %d", name, m.SizeBytes)
			}
		}
	}
	checkSparseRestore(t, repos["file"], mnt)
	checkRestoreOverGarbage(t, repos["s3"], mnt, size, shas[10])
}

func checkFull(t *testing.T, m *s3chain.Manifest, st s3chain.BackupStats) {
	t.Helper()
	// The volume has data in 2 of every 4 blocks; the written-zero half
	// block is data on disk but all zero, and the rest is holes.
	if m.DataBlocks != 32 || st.Blocks != 32 || m.ZeroBlocks != 0 || !m.Full() {
		t.Errorf("full backup: %d data blocks, %d zero entries, stats %+v", m.DataBlocks, m.ZeroBlocks, st)
	}
	if st.ScannedBytes > 48<<20 {
		t.Errorf("full backup read %d bytes; holes must be skipped", st.ScannedBytes)
	}
}

// checkSparseRestore restores into a fresh file and checks that zero blocks
// stayed holes: the file allocates no more than the backup's data.
func checkSparseRestore(t *testing.T, r *s3chain.Repo, dir string) {
	dest := filepath.Join(dir, "sparse")
	defer os.Remove(dest)
	m, st, err := r.Restore(context.Background(), s3chain.RestoreOptions{Chain: "ns/vol-a", BackupID: "latest", Destination: dest})
	if err != nil {
		t.Fatal(err)
	}
	var sb unix.Stat_t
	if err := unix.Stat(dest, &sb); err != nil {
		t.Fatal(err)
	}
	if alloc := sb.Blocks * 512; alloc > m.AllocatedBytes+(1<<20) || st.WrittenBytes != m.AllocatedBytes {
		t.Errorf("fresh restore allocates %d bytes, wrote %d; backup has %d non-zero bytes", alloc, st.WrittenBytes, m.AllocatedBytes)
	}
}

// checkRestoreOverGarbage restores into an existing file full of random
// bytes: zero blocks must read as zeros afterwards.
func checkRestoreOverGarbage(t *testing.T, r *s3chain.Repo, dir string, size int64, want string) {
	g := newTestVolume(t, t.TempDir(), size, size/4, 99)
	f, _ := os.OpenFile(g.path, os.O_RDWR, 0)
	g.writeAt(f, 0, size, false)
	f.Close()
	if _, _, err := r.Restore(context.Background(), s3chain.RestoreOptions{Chain: "ns/vol-a", BackupID: "latest", Destination: g.path}); err != nil {
		t.Fatal(err)
	}
	if got := fileSHA(t, g.path, size); got != want {
		t.Errorf("restore over garbage: sha256 %s, want %s", got, want)
	}
}
