package s3chain_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// lockedS3 opens prefix of srv with lock=governance and retain, and a
// raw minio client of the same bucket to look behind chainvol's back.
func lockedS3(t *testing.T, srv testutil.S3Server, prefix, retain string) (*s3chain.Repo, *minio.Client) {
	t.Helper()
	s, err := store.Open(context.Background(), srv.URL(prefix)+"&lock=governance&retain="+retain,
		store.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	c, err := minio.New(srv.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(srv.AccessKey, srv.SecretKey, ""),
		Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	return newRepo(t, s, nil), c
}

// retentions returns the retain-until of every object under prefix/ by
// key (without the prefix); the zero time for one without retention. A
// retention in another mode than mode fails the test.
func retentions(t *testing.T, c *minio.Client, bucket, prefix string, mode minio.RetentionMode) map[string]time.Time {
	t.Helper()
	ctx := context.Background()
	out := map[string]time.Time{}
	for oi := range c.ListObjectsIter(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix + "/", Recursive: true}) {
		if oi.Err != nil {
			t.Fatal(oi.Err)
		}
		key := strings.TrimPrefix(oi.Key, prefix+"/")
		// GetObjectRetention's answer from versitygw does not parse in
		// minio-go (see store.s3Store.Retention): read HEAD's headers.
		info, err := c.StatObject(ctx, bucket, oi.Key, minio.StatObjectOptions{})
		if err != nil {
			t.Fatalf("head %s: %v", oi.Key, err)
		}
		out[key] = time.Time{}
		if got := info.Metadata.Get("X-Amz-Object-Lock-Mode"); got != "" {
			if got != string(mode) {
				t.Fatalf("retention of %s: mode %q, want %q", oi.Key, got, mode)
			}
			if out[key], err = time.Parse(time.RFC3339, info.Metadata.Get("X-Amz-Object-Lock-Retain-Until-Date")); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// On a versitygw bucket with Object Lock, unversioned and versioned (as on
// AWS), a target with lock= and retain=
// keeps every object of a backup (blocks, manifest, config, ownership
// record) under retention and none of the protocol's locks; a block a
// newer backup reuses is extended to the newer date and stays locked
// after the first backup's date; a delete before the date is ErrRetained
// naming it, after it works; gc leaves locked unreferenced blocks alone
// without condemning them, and deletes them once they expire.
// versitygw's GetObjectRetention answer does not parse in minio-go: every
// retention is read from HEAD (store.s3Store.Retention).
func TestObjectLockVersitygw(t *testing.T) {
	t.Run("unversioned", func(t *testing.T) { testObjectLock(t, testutil.StartS3ObjectLock(t)) })
	t.Run("versioned", func(t *testing.T) { testObjectLock(t, testutil.StartS3ObjectLockVersioned(t)) })
}

func testObjectLock(t *testing.T, srv testutil.S3Server) {
	s3chain.SetLockMarginForTest(t, 0)
	ctx := context.Background()
	const chain = "ns/locked"
	short, raw := lockedS3(t, srv, "p", "6s")
	long, _ := lockedS3(t, srv, "p", "1h")
	dir := t.TempDir()
	vol := newTestVolume(t, dir, 1<<20, 64<<10, 5)
	snap1 := filepath.Join(dir, "snap1")
	vol.snapshot(snap1, false)
	start1 := time.Now()
	m1, _, err := short.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: snap1, BlockSize: 64 << 10, Owner: "host/test"})
	if err != nil {
		t.Fatal(err)
	}
	rets := retentions(t, raw, srv.Bucket, "p", minio.Governance)
	kinds := map[string]int{}
	for key, until := range rets {
		kind := strings.SplitN(key, "/", 2)[0]
		if strings.HasSuffix(key, ".state") {
			kind = "states" // the ready record (FORMAT.md §7.5)
		}
		kinds[kind]++
		if strings.HasPrefix(key, "pending/") {
			t.Errorf("protocol lock %s left behind", key)
			continue
		}
		if d := until.Sub(start1); d < 5*time.Second || d > 8*time.Second {
			t.Errorf("%s: retain-until %v, %v after the backup's start; want about 6 s", key, until, d)
		}
	}
	if kinds["blocks"] < 8 || kinds["manifests"] != 1 || kinds["states"] != 1 || kinds["chains"] != 1 {
		t.Fatalf("objects by kind: %v", kinds)
	}
	err = short.DeleteBackup(ctx, chain, m1.ID)
	if !errors.Is(err, s3chain.ErrRetained) || !strings.Contains(err.Error(), rets["manifests/ns_2flocked/"+m1.ID+".json"].Format(time.RFC3339)) {
		t.Fatalf("delete before the date = %v; want ErrRetained naming the date", err)
	}

	vol.change(3, 64<<10)
	snap2 := filepath.Join(dir, "snap2")
	vol.snapshot(snap2, false)
	start2 := time.Now()
	m2, _, err := long.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: snap2, Parent: m1.ID, Owner: "host/test"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(start1.Add(7 * time.Second))) // b1's date has passed
	after := retentions(t, raw, srv.Bucket, "p", minio.Governance)
	refs := map[string]bool{}
	for _, b := range m2.Blocks {
		refs[b.Digest] = true
	}
	reused := 0
	for key, until := range after {
		d := key[strings.LastIndexByte(key, '/')+1:]
		if !strings.HasPrefix(key, "blocks/") || !refs[d] {
			continue
		}
		if until.Before(start2.Add(59 * time.Minute)) {
			t.Errorf("block %s of the newer backup is retained until %v only", key, until)
		}
		if !rets[key].IsZero() {
			reused++ // written by b1, extended by b2
		}
	}
	if reused == 0 {
		t.Fatal("the second backup reused no block of the first")
	}
	if err := short.DeleteBackup(ctx, chain, m1.ID); err != nil {
		t.Fatalf("delete after the date: %v", err)
	}
	st, err := short.GC(ctx, s3chain.GCOptions{Chain: chain})
	if err != nil || st.DeletedBlocks == 0 || st.LockedBlocks != 0 {
		t.Fatalf("gc after b1 expired: %+v, %v; want b1's own blocks deleted", st, err)
	}
	if got, _, _ := restoreSHA(t, long, chain, m2.ID, dir); got != fileSHA(t, snap2, m2.SizeBytes) {
		t.Fatal("b2 does not restore byte for byte")
	}

	// Its manifest removed with the governance bypass (an administrator,
	// or a hostile writer with that permission), b2's blocks are
	// unreferenced but locked: gc leaves them, without a doom record. On
	// a versioned bucket that takes deleting the manifest's version by id
	// (a plain DELETE only hides it, and chainvol reads through a marker
	// over a locked version: TestObjectLockReadsThroughDeleteMarkers).
	mkey := "p/manifests/ns_2flocked/" + m2.ID + ".json"
	for oi := range raw.ListObjectsIter(ctx, srv.Bucket, minio.ListObjectsOptions{Prefix: mkey, WithVersions: srv.Versioned}) {
		if oi.Err != nil {
			t.Fatal(oi.Err)
		}
		if err := raw.RemoveObject(ctx, srv.Bucket, mkey, minio.RemoveObjectOptions{GovernanceBypass: true, VersionID: oi.VersionID}); err != nil {
			t.Fatal(err)
		}
	}
	st, err = long.GC(ctx, s3chain.GCOptions{Chain: chain})
	if err != nil || st.DeletedBlocks != 0 || st.LockedBlocks != len(refs) {
		t.Fatalf("gc of locked blocks: %+v, %v; want %d locked, none deleted", st, err, len(refs))
	}
	var locked string
	for key := range retentions(t, raw, srv.Bucket, "p", minio.Governance) {
		if strings.HasPrefix(key, "pending/") {
			t.Errorf("gc left %s", key)
		}
		if strings.HasPrefix(key, "blocks/") {
			locked = "p/" + key
		}
	}
	// What a versioned bucket (AWS) does and an unversioned one does not:
	// a plain DELETE of a locked object succeeds as a delete marker, and
	// the locked version stays (docs/operator.md "Immutable backups").
	err = raw.RemoveObject(ctx, srv.Bucket, locked, minio.RemoveObjectOptions{})
	if srv.Versioned != (err == nil) {
		t.Fatalf("versioned %v: plain delete of locked %s: %v", srv.Versioned, locked, err)
	}
	versions := 0
	for oi := range raw.ListObjectsIter(ctx, srv.Bucket, minio.ListObjectsOptions{Prefix: locked, WithVersions: srv.Versioned}) {
		if oi.Err == nil && !oi.IsDeleteMarker {
			versions++
		}
	}
	if versions != 1 {
		t.Fatalf("%d versions of %s left, want the locked one", versions, locked)
	}
}

// A target that asks for retention on a bucket without Object Lock is
// refused at the first backup, naming the bucket setting, before anything
// is written.
func TestObjectLockRefusesBucketWithoutIt(t *testing.T) {
	srv := testutil.StartS3(t)
	r, raw := lockedS3(t, srv, "p", "30d")
	dir := t.TempDir()
	vol := newTestVolume(t, dir, 1<<20, 64<<10, 6)
	_, _, err := r.Backup(context.Background(), s3chain.BackupOptions{Chain: "ns/a", Source: vol.path, BlockSize: 64 << 10})
	if !errors.Is(err, store.ErrNoObjectLock) || !errors.Is(err, store.ErrBadTarget) || !strings.Contains(err.Error(), "ObjectLockEnabled") {
		t.Fatalf("backup = %v; want ErrNoObjectLock naming ObjectLockEnabled", err)
	}
	if n := len(retentions(t, raw, srv.Bucket, "p", minio.Governance)); n != 0 {
		t.Fatalf("%d objects written", n)
	}
}

// A hostile writer holding the bucket's root keys, within the retention
// window of a COMPLIANCE target, deletes every object (with and without
// the governance bypass) and overwrites every key with other bytes: every
// ready backup still restores byte for byte (versitygw without
// versioning refuses each delete and overwrite of a locked object; the
// protocol's unlocked locks may go, which harms nothing).
func TestObjectLockHostileWriter(t *testing.T) {
	srv := testutil.StartS3ObjectLock(t)
	ctx := context.Background()
	s, err := store.Open(ctx, srv.URL("p")+"&lock=compliance&retain=1h",
		store.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	r := newRepo(t, s, testKey(3))
	_, raw := lockedS3(t, srv, "p", "1h")
	dir := t.TempDir()
	vol := newTestVolume(t, dir, 1<<20, 64<<10, 7)
	var ms []*s3chain.Manifest
	var shas []string
	for k := range 2 {
		snap := filepath.Join(dir, "snap"+string(rune('a'+k)))
		vol.snapshot(snap, false)
		m, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: "ns/h", Source: snap, BlockSize: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		ms, shas = append(ms, m), append(shas, fileSHA(t, snap, m.SizeBytes))
		vol.change(4, 64<<10)
	}
	refused := 0
	for key := range retentions(t, raw, srv.Bucket, "p", minio.Compliance) {
		full := "p/" + key
		for _, bypass := range []bool{false, true} {
			if raw.RemoveObject(ctx, srv.Bucket, full, minio.RemoveObjectOptions{GovernanceBypass: bypass}) != nil {
				refused++
			}
		}
		junk := strings.NewReader("hostile bytes")
		if _, err := raw.PutObject(ctx, srv.Bucket, full, junk, junk.Size(), minio.PutObjectOptions{}); err != nil {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("the hostile writer was refused nothing")
	}
	for k, m := range ms {
		if got, _, _ := restoreSHA(t, r, "ns/h", m.ID, dir); got != shas[k] {
			t.Fatalf("backup %s does not restore byte for byte after the attack", m.ID)
		}
	}
}
