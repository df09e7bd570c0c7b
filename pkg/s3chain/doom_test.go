package s3chain_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

const doomBS = 64 << 10

// keysUnder lists the keys under prefix.
func keysUnder(t *testing.T, st store.Store, prefix string) []string {
	t.Helper()
	var out []string
	if err := st.List(context.Background(), prefix, func(oi store.ObjectInfo) error {
		out = append(out, oi.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// plantDoom stores a doom record listing keys, as a gc that was killed (or
// paused for good) after writing it would have left it.
func plantDoom(t *testing.T, st store.Store, chain string, keys []string) {
	t.Helper()
	data, _ := json.Marshal(map[string]any{"formatVersion": 3, "chain": chain, "kind": "doom", "keys": keys})
	dir := strings.TrimSuffix(s3chain.ManifestKey(chain, "x"), "x.json")
	dir = "pending/" + strings.TrimPrefix(dir, "manifests/")
	if err := st.Put(context.Background(), dir+"doom-00000000000000aa.json", data); err != nil {
		t.Fatal(err)
	}
}

// TestBackupAvoidsDoomedKeys: blocks whose plain keys a doom record lists
// (a gc that stopped between its doom record and its deletes) are stored
// again under variant keys before the backup is ready; deleting every
// plain key a doom record names afterwards — the gc's late deletes
// landing — leaves the backup restorable, and so is an incremental on it.
func TestBackupAvoidsDoomedKeys(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := storetest.NewMem()
	r := newRepo(t, st, nil)
	const chain = "ns/doomed"
	v := newTestVolume(t, dir, 16*doomBS, doomBS, 1)
	m1, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, BlockSize: doomBS})
	if err != nil {
		t.Fatal(err)
	}
	var doomed []string
	for _, b := range m1.Blocks {
		doomed = append(doomed, s3chain.BlockKey(chain, b.Digest))
	}
	plantDoom(t, st, chain, doomed)
	want := fileSHA(t, v.path, v.size)
	m2, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, Parent: m1.ID})
	if err != nil {
		t.Fatal(err)
	}
	variants := 0
	for _, k := range keysUnder(t, st, s3chain.BlockPrefix(chain)) {
		if strings.Contains(k[strings.LastIndexByte(k, '/'):], ".") {
			variants++
		}
	}
	if variants != len(doomed) {
		t.Fatalf("%d variant keys, want one for each of the %d doomed blocks", variants, len(doomed))
	}
	for _, k := range doomed { // the paused gc's deletes land
		if err := st.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Verify(ctx, chain, m2.ID, true); err != nil {
		t.Fatalf("verify after the late deletes: %v", err)
	}
	if got, _, _ := restoreSHA(t, r, chain, m2.ID, dir); got != want {
		t.Fatalf("restore of %s after the late deletes: sha %s, want %s", m2.ID, got, want)
	}
	v.change(4, doomBS)
	m3, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, Parent: m2.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := restoreSHA(t, r, chain, m3.ID, dir); got != fileSHA(t, v.path, v.size) {
		t.Fatalf("restore of the incremental %s on variants: sha %s", m3.ID, got)
	}
}

// TestGCDoomRecordLifecycle: a gc that deletes leaves no doom record when
// every delete was answered, keeps it when one failed, and never deletes a
// chain's config, even of a chain it emptied.
func TestGCDoomRecordLifecycle(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f := storetest.NewFaulty(storetest.NewMem())
	r := newRepo(t, f, nil)
	const chain = "ns/gc"
	v := newTestVolume(t, dir, 8*doomBS, doomBS, 2)
	m, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, BlockSize: doomBS})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteBackup(ctx, chain, m.ID); err != nil {
		t.Fatal(err)
	}
	f.Add(storetest.Fault{Op: storetest.OpDelete, Key: func(k string) bool { return strings.HasPrefix(k, "blocks/") }, Times: 3})
	if _, err := r.GC(ctx, s3chain.GCOptions{Chain: chain}); err == nil {
		t.Fatal("gc with a failing delete succeeded")
	}
	if got := keysUnder(t, f, "pending/"); len(got) != 1 || !strings.Contains(got[0], "/doom-") {
		t.Fatalf("after a failed delete pending/ holds %q, want the gc's doom record", got)
	}
	f.Clear()
	st, err := r.GC(ctx, s3chain.GCOptions{Chain: chain})
	if err != nil {
		t.Fatal(err)
	}
	if st.DeletedBlocks == 0 || len(keysUnder(t, f, s3chain.BlockPrefix(chain))) != 0 {
		t.Fatalf("second gc: %+v, blocks left %q", st, keysUnder(t, f, s3chain.BlockPrefix(chain)))
	}
	if got := keysUnder(t, f, "pending/"); len(got) != 1 {
		t.Fatalf("pending/ holds %q, want only the failed gc's record (its own was removed)", got)
	}
	if got := keysUnder(t, f, "chains/"); len(got) != 1 {
		t.Fatalf("chains/ holds %q: a gc must never delete a config", got)
	}
	if _, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path}); err != nil {
		t.Fatalf("backup into the emptied chain: %v", err)
	}
}

// TestConfirmBackupAfterRestart: a writer stopped right after its manifest
// commit is finished by ConfirmBackup from its snapshot: condemned blocks
// get variants; a snapshot that no longer holds the bytes is refused with
// ErrCorruptBlock.
func TestConfirmBackupAfterRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := storetest.NewMem()
	r := newRepo(t, st, nil)
	const chain = "ns/confirm"
	v := newTestVolume(t, dir, 8*doomBS, doomBS, 3)
	m, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: v.path, BlockSize: doomBS})
	if err != nil {
		t.Fatal(err)
	}
	doomed := []string{s3chain.BlockKey(chain, m.Blocks[0].Digest)}
	plantDoom(t, st, chain, doomed)
	if err := r.ConfirmBackup(ctx, chain, m.ID, v.path); err != nil {
		t.Fatal(err)
	}
	_ = st.Delete(ctx, doomed[0])
	if err := r.Verify(ctx, chain, m.ID, true); err != nil {
		t.Fatalf("verify after confirm and the late delete: %v", err)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, make([]byte, v.size), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, k := range keysUnder(t, st, s3chain.BlockPrefix(chain)) {
		_ = st.Delete(ctx, k)
	}
	if err := r.ConfirmBackup(ctx, chain, m.ID, other); !errors.Is(err, s3chain.ErrCorruptBlock) {
		t.Fatalf("ConfirmBackup from another source = %v, want ErrCorruptBlock", err)
	}
}
