package s3chain_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// plainDeleteAll is a hostile writer's plain DELETE (no version id) of
// every current object under prefix/: on a versioned bucket each adds a
// delete marker, also over locked objects. It returns how many it hid.
func plainDeleteAll(t *testing.T, c *minio.Client, bucket, prefix string) int {
	t.Helper()
	ctx := context.Background()
	var keys []string
	for oi := range c.ListObjectsIter(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix + "/", Recursive: true}) {
		if oi.Err != nil {
			t.Fatal(oi.Err)
		}
		keys = append(keys, oi.Key)
	}
	for _, k := range keys {
		if err := c.RemoveObject(ctx, bucket, k, minio.RemoveObjectOptions{}); err != nil {
			t.Fatalf("plain delete of %s: %v", k, err)
		}
	}
	for range c.ListObjectsIter(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix + "/", Recursive: true}) {
		t.Fatal("an object is still current after the plain deletes")
	}
	return len(keys)
}

// openLocked opens the target prefix of srv with lock=mode&retain=retain.
func openLocked(t *testing.T, srv testutil.S3Server, prefix, mode, retain string) store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), srv.URL(prefix)+"&lock="+mode+"&retain="+retain,
		store.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// backupIDs returns the ids Backups lists for chain.
func backupIDs(t *testing.T, r *s3chain.Repo, chain string) []string {
	t.Helper()
	ms, err := r.Backups(context.Background(), chain)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	return ids
}

// On a versioned Object Lock bucket (as on AWS) a hostile writer's plain
// DELETE of every object of a COMPLIANCE target within its retention
// window only adds delete markers: chainvol reads through them (FORMAT.md
// §7.4 "Delete markers"), so the chain is still listed, every ready backup
// is listed, verifies deep and restores byte for byte, and a new backup
// of the chain (storing the hidden blocks again) is ready and restores
// too.
func TestObjectLockReadsThroughDeleteMarkers(t *testing.T) {
	srv := testutil.StartS3ObjectLockVersioned(t)
	ctx := context.Background()
	s := openLocked(t, srv, "p", "compliance", "1h")
	r := newRepo(t, s, testKey(5))
	_, raw := lockedS3(t, srv, "p", "1h")
	dir := t.TempDir()
	vol := newTestVolume(t, dir, 1<<20, 64<<10, 8)
	backup := func(k int) (*s3chain.Manifest, string) {
		snap := filepath.Join(dir, "snap"+string(rune('a'+k)))
		vol.snapshot(snap, false)
		m, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: "ns/m", Source: snap, BlockSize: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		vol.change(3, 64<<10)
		return m, fileSHA(t, snap, m.SizeBytes)
	}
	var ms []*s3chain.Manifest
	var shas []string
	for k := range 2 {
		m, sha := backup(k)
		ms, shas = append(ms, m), append(shas, sha)
	}
	want := backupIDs(t, r, "ns/m")
	if n := plainDeleteAll(t, raw, srv.Bucket, "p"); n == 0 {
		t.Fatal("nothing to delete")
	}
	// A fresh Repo: nothing cached from before the attack.
	r = newRepo(t, s, testKey(5))
	if chains, err := r.Chains(ctx); err != nil || !slices.Equal(chains, []string{"ns/m"}) {
		t.Fatalf("chains after the attack = %v, %v", chains, err)
	}
	if got := backupIDs(t, r, "ns/m"); !slices.Equal(got, want) {
		t.Fatalf("backups after the attack = %v, want %v", got, want)
	}
	for k, m := range ms {
		if err := r.Verify(ctx, "ns/m", m.ID, true); err != nil {
			t.Fatalf("verify --deep %s after the attack: %v", m.ID, err)
		}
		if got, _, _ := restoreSHA(t, r, "ns/m", m.ID, dir); got != shas[k] {
			t.Fatalf("backup %s does not restore byte for byte after the attack", m.ID)
		}
	}
	if err := r.DeleteBackup(ctx, "ns/m", ms[0].ID); !errors.Is(err, s3chain.ErrRetained) {
		t.Fatalf("delete of a hidden locked backup = %v, want ErrRetained", err)
	}
	m, sha := backup(2)
	if got, _, _ := restoreSHA(t, r, "ns/m", m.ID, dir); got != sha {
		t.Fatal("a backup made after the attack does not restore byte for byte")
	}
}

// What the protocol deleted stays deleted on a versioned Object Lock
// bucket: a backup deleted after its retain-until date (a plain DELETE,
// leaving its versions behind markers) is neither listed nor found, and
// one an attacker hid after its date is gone too (Object Lock protects
// only until the date), while a backup still within it is read through.
func TestObjectLockMarkersAfterTheDate(t *testing.T) {
	s3chain.SetLockMarginForTest(t, 0)
	srv := testutil.StartS3ObjectLockVersioned(t)
	ctx := context.Background()
	open := func(retain string) *s3chain.Repo {
		s, err := store.Open(ctx, srv.URL("p")+"&lock=compliance&retain="+retain,
			store.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
		if err != nil {
			t.Fatal(err)
		}
		return newRepo(t, s, nil)
	}
	short, long := open("3s"), open("1h")
	_, raw := lockedS3(t, srv, "p", "1h")
	dir := t.TempDir()
	vol := newTestVolume(t, dir, 512<<10, 64<<10, 9)
	backup := func(r *s3chain.Repo, chain string) *s3chain.Manifest {
		snap := filepath.Join(dir, "snap-"+strings.ReplaceAll(chain, "/", "-"))
		vol.snapshot(snap, false)
		m, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: snap, BlockSize: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		vol.change(2, 64<<10)
		return m
	}
	deleted, expired := backup(short, "ns/del"), backup(short, "ns/exp")
	kept := backup(long, "ns/kept")
	time.Sleep(4 * time.Second)
	if err := short.DeleteBackup(ctx, "ns/del", deleted.ID); err != nil {
		t.Fatalf("delete after the date: %v", err)
	}
	plainDeleteAll(t, raw, srv.Bucket, "p")
	r := open("1h")
	for _, c := range []struct {
		chain, id string
		listed    bool
	}{{"ns/del", deleted.ID, false}, {"ns/exp", expired.ID, false}, {"ns/kept", kept.ID, true}} {
		_, err := r.Manifest(ctx, c.chain, c.id)
		if c.listed != (err == nil) {
			t.Errorf("manifest %s of %s = %v; want found %v", c.id, c.chain, err, c.listed)
		}
	}
	chains, err := r.Chains(ctx)
	if err != nil || !slices.Equal(chains, []string{"ns/kept"}) {
		t.Fatalf("chains = %v, %v; want only the locked one", chains, err)
	}
}

// A backup made after a hostile writer hid a chain's blocks behind
// delete markers rests only on current versions, also when its confirm
// asks about each block with a HEAD (a chain too large to list): a hidden
// version is read through only while its retention holds by the reader's
// clock, so a backup relying on one would stop restoring at that date
// although it is still ready (kept longer), and one a gc deleted after
// its date would be relied on by a reader whose clock is behind. The
// writer stores such a block again instead (FORMAT.md §7.4).
func TestObjectLockNewBackupDoesNotRestOnHiddenBlocks(t *testing.T) {
	s3chain.SetConfirmListBudgetForTest(t, 0)
	srv := testutil.StartS3ObjectLockVersioned(t)
	ctx := context.Background()
	s := openLocked(t, srv, "p", "compliance", "1h")
	r := newRepo(t, s, nil)
	_, raw := lockedS3(t, srv, "p", "1h")
	dir := t.TempDir()
	vol := newTestVolume(t, dir, 512<<10, 64<<10, 11)
	snap := filepath.Join(dir, "snap")
	vol.snapshot(snap, false)
	first, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: "ns/h", Source: snap, BlockSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	plainDeleteAll(t, raw, srv.Bucket, "p")
	vol.change(1, 64<<10) // one new block: a current key, so the listing is cut short
	vol.snapshot(snap, false)
	r = newRepo(t, s, nil)
	m, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: "ns/h", Source: snap, BlockSize: 64 << 10, Parent: first.ID})
	if err != nil {
		t.Fatal(err)
	}
	var current []string
	for oi := range raw.ListObjectsIter(ctx, srv.Bucket, minio.ListObjectsOptions{Prefix: "p/" + s3chain.BlockPrefix("ns/h"), Recursive: true}) {
		if oi.Err != nil {
			t.Fatal(oi.Err)
		}
		current = append(current, strings.TrimPrefix(oi.Key, "p/"))
	}
	n := 0
	for _, b := range m.Blocks {
		if b.Digest == "" {
			continue
		}
		n++
		plain := s3chain.BlockKey("ns/h", b.Digest)
		if !slices.ContainsFunc(current, func(k string) bool { return k == plain || strings.HasPrefix(k, plain+".") }) {
			t.Errorf("block %d (%s) of the new ready backup has no current version: it rests on a hidden one", b.Index, plain)
		}
	}
	if n == 0 {
		t.Fatal("the backup has no data blocks")
	}
}

// A writer in a chain without state records whose manifest's retention
// (its last step, FORMAT.md §7.4) landed although its answer was lost
// does not retract the manifest with a plain DELETE: on a versioned bucket
// that is only a delete marker over a retained version, which every
// reader reads through as a backup until its date (by its own clock), so
// the "retracted" backup would stay listed behind the marker. It is left
// current instead, as a chain with state records leaves it: a confirmed
// backup reported failed.
func TestObjectLockRetractDoesNotHideRetainedManifest(t *testing.T) {
	srv := testutil.StartS3ObjectLockVersioned(t)
	ctx := context.Background()
	s := openLocked(t, srv, "p", "governance", "1h")
	f := storetest.NewFaulty(s)
	r := newRepo(t, f, nil)
	_, raw := lockedS3(t, srv, "p", "1h")
	if err := s3chain.CreateV3ConfigWithoutStatesForTest(ctx, r, "ns/r", 64<<10); err != nil {
		t.Fatal(err)
	}
	f.Add(storetest.Fault{Op: storetest.OpRetain, After: true,
		Key: func(k string) bool { return strings.HasPrefix(k, "manifests/") }})
	dir := t.TempDir()
	vol := newTestVolume(t, dir, 256<<10, 64<<10, 12)
	snap := filepath.Join(dir, "snap")
	vol.snapshot(snap, false)
	if _, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: "ns/r", Source: snap, BlockSize: 64 << 10}); err == nil {
		t.Fatal("backup whose manifest retention failed reported ready")
	}
	n := 0
	for v := range raw.ListObjectsIter(ctx, srv.Bucket, minio.ListObjectsOptions{Prefix: "p/manifests/", Recursive: true, WithVersions: true}) {
		if v.Err != nil {
			t.Fatal(v.Err)
		}
		n++
		if v.IsDeleteMarker {
			t.Fatalf("the retained manifest %s was retracted behind a delete marker", v.Key)
		}
	}
	if n != 1 {
		t.Fatalf("%d manifest versions, want the one", n)
	}
}
