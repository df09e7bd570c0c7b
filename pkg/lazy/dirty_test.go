package lazy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/lazy"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// TestBrowseDirtyJournal: a backup of an ext4 taken while it was mounted
// (its journal flagged for recovery, as "backup create --from" a live
// disk leaves it) mounts for browsing without replay ("noload"), which
// would otherwise refuse a read-only device, and lists what was
// checkpointed before the copy.
func TestBrowseDirtyJournal(t *testing.T) {
	testutil.RequireFUSE(t)
	ctx := context.Background()
	dir := t.TempDir()
	img, snap, mnt := filepath.Join(dir, "src.img"), filepath.Join(dir, "snap.img"), filepath.Join(dir, "src")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Truncate(64 << 20)
	f.Close()
	testutil.Run(t, "mkfs.ext4", "-q", "-F", img)
	_ = os.Mkdir(mnt, 0o755)
	testutil.Run(t, "mount", "-o", "loop", img, mnt)
	if err := os.WriteFile(filepath.Join(mnt, "before"), []byte("checkpointed"), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Run(t, "sync")
	testutil.Run(t, "cp", "--sparse=always", img, snap) // mounted: needs_recovery is set
	testutil.Run(t, "umount", mnt)
	if out := testutil.Run(t, "dumpe2fs", "-h", snap); !strings.Contains(out, "needs_recovery") {
		t.Skipf("the copy's journal is clean; nothing to test: %s", out)
	}
	srv := testutil.StartS3(t)
	st, err := store.Open(ctx, srv.URL("t"), store.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := s3chain.NewRepo(st, s3chain.RepoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: snap, BlockSize: 1 << 20, FSType: "ext4", VolumeMode: "Filesystem"})
	if err != nil {
		t.Fatal(err)
	}
	br, err := repo.OpenBlocks(ctx, chain, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	im, err := lazy.New(br, lazy.Options{CacheDir: dir, RetryFor: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	fuseDir, bdir := filepath.Join(dir, "fuse"), filepath.Join(dir, "mnt")
	_ = os.Mkdir(fuseDir, 0o755)
	_ = os.Mkdir(bdir, 0o755)
	bw, err := lazy.OpenBrowse(ctx, im, fuseDir, bdir, "ext4")
	if err != nil {
		t.Fatalf("browse of an ext4 with a dirty journal: %v", err)
	}
	defer bw.Close()
	ents, err := os.ReadDir(bdir)
	if err != nil || len(ents) == 0 {
		t.Fatalf("list: %v, %d entries", err, len(ents))
	}
	data, err := os.ReadFile(filepath.Join(bdir, "before"))
	t.Logf("%d entries; before: %q %v", len(ents), data, err)
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
}
