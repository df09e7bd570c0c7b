package s3chain_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// randomDigestHex is 64 random lower-case hex digits.
func randomDigestHex() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// TestBreakerDoomRecordTooLargeForLongChainName: a doom record holds up to
// maxDoomKeys (50,000) keys, sized for keys of ~110 bytes, but is read back
// with an 8 MiB bound. A valid 100-byte chain name escapes to up to 300
// bytes, so a block key is ~375 bytes and a record of ~23,000 keys no
// longer fits the bound: every backup's confirm then fails reading it. A
// gc whose delete failed (or that was killed) leaves that record for good,
// so the chain can never be backed up again.
func TestBreakerDoomRecordTooLargeForLongChainName(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f := storetest.NewFaulty(storetest.NewMem())
	r := newRepo(t, f, nil)
	chain := "a" + strings.Repeat("_", 99) // valid: 100 bytes of [A-Za-z0-9._-]
	if err := s3chain.ValidChainName(chain); err != nil {
		t.Fatal(err)
	}
	v := newTestVolume(t, dir, 8*doomBS, doomBS, 7)
	if _, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, BlockSize: doomBS}); err != nil {
		t.Fatal(err)
	}
	// Unreferenced block objects (e.g. of a deleted backup of a big volume:
	// 25,000 x 2 MiB blocks is 50 GB).
	for range 25_000 {
		if err := f.Put(ctx, s3chain.BlockKey(chain, randomDigestHex()), []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	f.Add(storetest.Fault{Op: storetest.OpDelete, Key: func(k string) bool { return strings.HasPrefix(k, "blocks/") }, Times: 3})
	if _, err := r.GC(ctx, s3chain.GCOptions{Chain: chain}); err == nil {
		t.Fatal("gc with a failing delete succeeded")
	}
	f.Clear()
	for _, k := range keysUnder(t, f, "pending/") {
		oi, _ := f.Stat(ctx, k)
		t.Logf("left: %s (%d bytes)", k[:40], oi.Size)
	}
	if _, err := r.GC(ctx, s3chain.GCOptions{Chain: chain}); err != nil {
		t.Fatalf("second gc: %v", err)
	}
	if _, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path}); err != nil {
		t.Fatalf("backup after a gc left its (valid) doom record: %v", err)
	}
}

// TestBreakerVerifyDeepLateDeleteOfDoomedPlainKey: a ready backup whose
// blocks' plain keys are doomed (a paused gc) holds variants; the gc's
// deletes landing between Verify's Stat of the plain key and its Get make
// deep Verify report a missing block, though every block has a live
// variant (Restore falls back to it in the same race; Verify does not).
func TestBreakerVerifyDeepLateDeleteOfDoomedPlainKey(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mem := storetest.NewMem()
	f := storetest.NewFaulty(mem)
	r := newRepo(t, f, nil)
	const chain = "ns/verify-late"
	v := newTestVolume(t, dir, 4*doomBS, doomBS, 11)
	m1, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, BlockSize: doomBS})
	if err != nil {
		t.Fatal(err)
	}
	var doomed []string
	for _, b := range m1.Blocks {
		if b.Digest != "" {
			doomed = append(doomed, s3chain.BlockKey(chain, b.Digest))
		}
	}
	plantDoom(t, mem, chain, doomed)
	m2, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, Parent: m1.ID})
	if err != nil {
		t.Fatal(err)
	}
	isPlain := func(k string) bool { return slicesContains(doomed, k) }
	g := f.Hold(storetest.OpGet, isPlain, 1)
	done := make(chan error, 1)
	go func() { done <- r.Verify(ctx, chain, m2.ID, true) }()
	if _, err := g.Await(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range doomed { // the paused gc's deletes land now
		_ = mem.Delete(ctx, k)
	}
	g.Release()
	if err := <-done; err != nil {
		t.Fatalf("deep verify of ready backup %s while doomed plain keys are deleted: %v", m2.ID, err)
	}
}

func slicesContains(s []string, x string) bool {
	for _, e := range s {
		if e == x {
			return true
		}
	}
	return false
}

// TestBreakerRestoreFallbackOnlyOnce: a gc condemned both the plain key k
// and an old variant V0 of digest d (d was unreferenced then) and is paused
// before its deletes. A backup of d is made meanwhile: its confirm sees k
// and V0 doomed and stores a fresh variant V1, and it is ready. A restore
// picks k; the gc's delete of k lands, fetchOne falls back once, to the
// first variant listed, V0; the gc's next delete (of V0) lands too; the
// restore then fails naming the block, though V1 holds it.
func TestBreakerRestoreFallbackOnlyOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mem := storetest.NewMem()
	f := storetest.NewFaulty(mem)
	r := newRepo(t, f, nil)
	const chain = "ns/fallback"
	v := newTestVolume(t, dir, 2*doomBS, doomBS, 5)
	m1, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, BlockSize: doomBS})
	if err != nil {
		t.Fatal(err)
	}
	var d string
	for _, b := range m1.Blocks {
		if b.Digest != "" {
			d = b.Digest
			break
		}
	}
	k := s3chain.BlockKey(chain, d)
	v0 := k + ".0000000000000000"
	obj, err := mem.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.Put(ctx, v0, obj); err != nil { // an older backup's variant
		t.Fatal(err)
	}
	plantDoom(t, mem, chain, []string{k, v0})
	m2, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, Parent: m1.ID})
	if err != nil {
		t.Fatal(err)
	}
	want := fileSHA(t, v.path, v.size)
	gK := f.Hold(storetest.OpGet, func(key string) bool { return key == k }, 1)
	gV := f.Hold(storetest.OpGet, func(key string) bool { return key == v0 }, 1)
	done := make(chan error, 1)
	dest := dir + "/restore"
	go func() {
		_, _, err := r.Restore(ctx, s3chain.RestoreOptions{Chain: chain, BackupID: m2.ID, Destination: dest})
		done <- err
	}()
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := gK.Await(actx); err != nil {
		t.Fatalf("restore did not fetch the plain key: %v", err)
	}
	_ = mem.Delete(ctx, k) // the paused gc's delete of k lands
	gK.Release()
	if _, err := gV.Await(actx); err == nil {
		_ = mem.Delete(ctx, v0) // and its next one, of V0
	}
	gV.Release()
	if err := <-done; err != nil {
		t.Fatalf("restore of ready backup %s: %v", m2.ID, err)
	}
	if got := fileSHA(t, dest, v.size); got != want {
		t.Fatalf("restore sha %s, want %s", got, want)
	}
}

// TestBreakerDoomRecordLeftWhenSecondReadFails: a gc whose second read of
// the manifests fails (a transient listing error) has sent no delete, yet
// it leaves its doom record for good: every later backup GETs it forever
// and stores variants for what it lists; each such gc adds one more.
func TestBreakerDoomRecordLeftWhenSecondReadFails(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f := storetest.NewFaulty(storetest.NewMem())
	r := newRepo(t, f, nil)
	const chain = "ns/second-read"
	v := newTestVolume(t, dir, 4*doomBS, doomBS, 9)
	m, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, BlockSize: doomBS})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteBackup(ctx, chain, m.ID); err != nil {
		t.Fatal(err)
	}
	f.Add(storetest.Fault{Op: storetest.OpList, Key: func(k string) bool { return strings.HasPrefix(k, "manifests/") }, Nth: 2})
	if _, err := r.GC(ctx, s3chain.GCOptions{Chain: chain}); err == nil {
		t.Fatal("gc with a failing second read succeeded")
	}
	if n := len(keysUnder(t, f, s3chain.BlockPrefix(chain))); n == 0 {
		t.Fatal("the gc deleted blocks")
	}
	if got := keysUnder(t, f, "pending/"); len(got) != 0 {
		t.Fatalf("a gc that sent no delete left %q", got)
	}
}

// TestBreakerWholeGCStopsAtUnreadableManifest: "a chain with an unreadable
// manifest is left alone" (FORMAT.md §7.2), but a gc of every chain stops
// at that chain with an error: the chains listed after it are never
// collected while it stays unreadable (their orphans leak without bound).
func TestBreakerWholeGCStopsAtUnreadableManifest(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mem := storetest.NewMem()
	r := newRepo(t, mem, nil)
	v := newTestVolume(t, dir, 4*doomBS, doomBS, 17)
	if _, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: "a", Source: v.path, BlockSize: doomBS}); err != nil {
		t.Fatal(err)
	}
	mb, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: "b", Source: v.path, BlockSize: doomBS})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteBackup(ctx, "b", mb.ID); err != nil {
		t.Fatal(err)
	}
	// One damaged (or newer-format) manifest in chain a.
	if err := mem.Put(ctx, s3chain.ManifestKey("a", "broken"), []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	st, err := r.GC(ctx, s3chain.GCOptions{})
	t.Logf("gc: %+v, %v", st, err)
	if n := len(keysUnder(t, mem, s3chain.BlockPrefix("b"))); n != 0 {
		t.Fatalf("chain b's %d orphan blocks were not collected by a gc of every chain (chain a has an unreadable manifest)", n)
	}
}

// TestBreakerEncryptedVariants: the doom/variant path on an encrypted chain.
func TestBreakerEncryptedVariants(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := storetest.NewMem()
	r := newRepo(t, st, testKey(3))
	const chain = "ns/enc-doomed"
	v := newTestVolume(t, dir, 8*doomBS, doomBS, 21)
	m1, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, BlockSize: doomBS})
	if err != nil {
		t.Fatal(err)
	}
	var doomed []string
	for _, b := range m1.Blocks {
		if b.Digest != "" {
			doomed = append(doomed, s3chain.BlockKey(chain, b.Digest))
		}
	}
	plantDoom(t, st, chain, doomed)
	want := fileSHA(t, v.path, v.size)
	m2, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, Parent: m1.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range doomed {
		_ = st.Delete(ctx, k)
	}
	if err := r.Verify(ctx, chain, m2.ID, true); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if got, _, _ := restoreSHA(t, r, chain, m2.ID, dir); got != want {
		t.Fatalf("restore sha %s, want %s", got, want)
	}
	if _, err := r.GC(ctx, s3chain.GCOptions{Chain: chain}); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := restoreSHA(t, r, chain, m2.ID, dir); got != want {
		t.Fatalf("restore after gc sha %s, want %s", got, want)
	}
}

// TestBreakerConfirmBackupIgnoresTakeOver: Backup checks the owner again
// after its commit and retracts its manifest when the chain was taken over
// meanwhile; a writer restarted after its commit finishes with
// ConfirmBackup, which does not: the same schedule (commit, takeover, then
// the confirm) reports the old owner's backup ready.
func TestBreakerConfirmBackupIgnoresTakeOver(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := storetest.NewMem()
	r := newRepo(t, st, nil)
	const chain = "ns/owned"
	v := newTestVolume(t, dir, 4*doomBS, doomBS, 23)
	m, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, BlockSize: doomBS, Owner: "cluster/a"})
	if err != nil {
		t.Fatal(err)
	}
	// Pretend the writer of m stopped right after its commit, and a planned
	// migration took the chain over before it restarted.
	if _, err := r.TakeOver(ctx, chain, "cluster/b"); err != nil {
		t.Fatal(err)
	}
	err = r.ConfirmBackup(ctx, chain, m.ID, v.path)
	if !errors.Is(err, s3chain.ErrChainOwned) {
		t.Fatalf("ConfirmBackup of %q's backup after a takeover by %q = %v, want ErrChainOwned (as Backup's own post-commit check)", m.Owner, "cluster/b", err)
	}
}

// TestGCOversizedStateRecordLeavesOnlyItsChain: a state record larger than
// any record (damage, or a bucket writer) makes its chain unreadable like
// a damaged manifest (ErrInvalidManifest): left alone, while a gc of
// every chain still collects the others.
func TestGCOversizedStateRecordLeavesOnlyItsChain(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mem := storetest.NewMem()
	r := newRepo(t, mem, nil)
	v := newTestVolume(t, dir, 4*doomBS, doomBS, 17)
	ma, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: "a", Source: v.path, BlockSize: doomBS})
	if err != nil {
		t.Fatal(err)
	}
	mb, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: "b", Source: v.path, BlockSize: doomBS})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteBackup(ctx, "b", mb.ID); err != nil {
		t.Fatal(err)
	}
	stateKey := strings.TrimSuffix(s3chain.ManifestKey("a", ma.ID), ".json") + ".state"
	if err := mem.Put(ctx, stateKey, []byte(strings.Repeat(" ", 8<<10))); err != nil {
		t.Fatal(err)
	}
	st, err := newRepo(t, mem, nil).GC(ctx, s3chain.GCOptions{})
	if !errors.Is(err, s3chain.ErrInvalidManifest) {
		t.Errorf("gc with an oversized state record: %v, want ErrInvalidManifest", err)
	}
	if n := len(keysUnder(t, mem, s3chain.BlockPrefix("b"))); n != 0 {
		t.Fatalf("chain b's %d orphan blocks were not collected (gc: %+v, %v)", n, st, err)
	}
}

// TestGCWithoutConditionalWritesLeavesUnready: gc works on a store without
// create-if-absent (FORMAT.md §7.3) in a chain with state records too: it
// cannot void an abandoned unready manifest there (a void record needs
// PutIfAbsent), so it leaves it pending with its blocks, rather than
// failing the gc of every chain for good.
func TestGCWithoutConditionalWritesLeavesUnready(t *testing.T) {
	ctx := context.Background()
	f := storetest.NewFaulty(storetest.NewMem())
	r := newRepo(t, f, nil)
	v := newTestVolume(t, t.TempDir(), 4*doomBS, doomBS, 23)
	isState := func(k string) bool { return strings.HasSuffix(k, ".state") }
	f.FailKeys(storetest.OpPutIfAbsent, isState, errors.New("lost"))
	if _, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: "a", Source: v.path, BlockSize: doomBS, BackupID: "u"}); err == nil {
		t.Fatal("backup whose ready record failed: no error")
	}
	f.Clear()
	f.WithoutConditionalWrites()
	st, err := newRepo(t, f, nil).GC(ctx, s3chain.GCOptions{})
	if err != nil {
		t.Fatalf("gc on a store without conditional writes: %+v, %v", st, err)
	}
	if st.VoidedBackups != 0 || st.DeletedBlocks != 0 {
		t.Errorf("gc: %+v: want the unready manifest and its blocks left alone", st)
	}
}
