package s3chain_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// The regression tests of "a listed backup is not always a ready one"
// (FORMAT.md §7.4): each runs the schedule on a chain with state records,
// where listings show only ready backups, and on a version-3 chain made
// before them, where every manifest is listed (kept as it was: the defect
// shows there).

// readyWorld is a fenceWorld whose chain is new (state records) or old.
func readyWorld(t *testing.T, old bool) (*fenceWorld, *s3chain.Repo) {
	fw := newFenceWorld(t, 200*time.Millisecond, nil)
	_, setup := fw.actor()
	if old {
		if err := s3chain.CreateV3ConfigWithoutStatesForTest(context.Background(), setup, fw.chain, fenceBS); err != nil {
			t.Fatal(err)
		}
	}
	return fw, setup
}

// source writes image to a file of fw's and returns its path.
func (fw *fenceWorld) source(image [][]byte) string {
	fw.mu.Lock()
	fw.files++
	path := filepath.Join(fw.dir, fmt.Sprintf("src%d", fw.files))
	fw.mu.Unlock()
	if err := os.WriteFile(path, slices.Concat(image...), 0o600); err != nil {
		fw.t.Fatal(err)
	}
	return path
}

func (fw *fenceWorld) opts(src, id string) s3chain.BackupOptions {
	return s3chain.BackupOptions{Chain: fw.chain, Source: src, BlockSize: fenceBS, BackupID: id, Workers: 2}
}

// listedIDs returns the ids Backups lists with a fault-free Repo.
func (fw *fenceWorld) listedIDs() []string {
	fw.t.Helper()
	repo, _ := s3chain.NewRepo(fw.root, s3chain.RepoOptions{LeaseTTL: fw.ttl})
	ms, err := repo.Backups(context.Background(), fw.chain)
	if err != nil {
		fw.t.Fatalf("list: %v", err)
	}
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	return ids
}

// state returns the state of id's record ("" for none) and the manifest
// digest it names.
func (fw *fenceWorld) state(id string) (string, string) {
	fw.t.Helper()
	data, err := fw.root.Get(context.Background(), s3chain.StateKeyForTest(fw.chain, id))
	if err != nil {
		return "", ""
	}
	var rec struct{ State, Manifest string }
	if err := json.Unmarshal(data, &rec); err != nil {
		fw.t.Fatalf("state record of %s: %v", id, err)
	}
	return rec.State, rec.Manifest
}

func isManifest(k string) bool {
	return strings.HasPrefix(k, "manifests/") && strings.HasSuffix(k, ".json")
}

// manifestDigest is Manifest.Digest of the bytes stored for id ("" if none).
func (fw *fenceWorld) manifestDigest(id string) string {
	data, err := fw.root.Get(context.Background(), s3chain.ManifestKey(fw.chain, id))
	if err != nil {
		return ""
	}
	m, err := s3chain.DecodeManifest(data)
	if err != nil {
		fw.t.Fatalf("stored manifest of %s: %v", id, err)
	}
	return m.Digest()
}

// lateCommit is instance 1: a writer's manifest PutIfAbsent is held on the
// wire until its lease-bounded ctx gives up, and the backup fails; a gc
// then frees its blocks (no manifest lists them); then the request lands.
// It returns the late backup's id and fw's ready base backup.
func lateCommit(t *testing.T, fw *fenceWorld, setup *s3chain.Repo) (string, *s3chain.Manifest) {
	base := fw.mustBackup(setup, fw.image(1, 4), "")
	view, w := fw.actor()
	commit := view.Hold(storetest.OpPutIfAbsent, isManifest, 1)
	src := fw.source(fw.image(2, 4))
	run := start(func() error {
		_, _, err := w.Backup(context.Background(), fw.opts(src, "late"))
		return err
	})
	if _, ok := reach(t, commit, run, 5*time.Second); !ok {
		t.Fatalf("the backup made no commit: %v", run.wait(t))
	}
	if err := run.wait(t); err == nil {
		t.Fatal("the backup reported ready though its commit never landed")
	}
	fw.waitStale(fw.isLock("writer"))
	_, gcRepo := fw.actor()
	st, err := gcRepo.GC(context.Background(), s3chain.GCOptions{Chain: fw.chain})
	if err != nil || st.DeletedBlocks == 0 {
		t.Fatalf("the gc freed no block of the failed backup: %+v, %v", st, err)
	}
	commit.Release()
	if fw.manifestDigest("late") == "" {
		t.Fatal("the held commit did not land")
	}
	return "late", base
}

// Instance 1 on a chain with state records: the late manifest is never
// listed, nor named by @latest; a gc voids it and deletes it; the ready
// base restores byte-identically.
func TestReadyLateCommitNotListed(t *testing.T) {
	fw, setup := readyWorld(t, false)
	id, base := lateCommit(t, fw, setup)
	ctx := context.Background()
	if got := fw.listedIDs(); !slices.Equal(got, []string{base.ID}) {
		t.Errorf("listed %v, want only the ready %s", got, base.ID)
	}
	if m, err := setup.Manifest(ctx, fw.chain, "latest"); err != nil || m.ID != base.ID {
		t.Errorf("@latest is %v (%v), want %s", m, err, base.ID)
	}
	if _, err := setup.Manifest(ctx, fw.chain, id); !errors.Is(err, s3chain.ErrBackupNotReady) {
		t.Errorf("the late manifest by id: %v, want ErrBackupNotReady", err)
	}
	if err := setup.Verify(ctx, fw.chain, id, false); !errors.Is(err, s3chain.ErrBackupNotFound) {
		t.Errorf("verify of the late manifest: %v, want ErrBackupNotFound", err)
	}
	digest := fw.manifestDigest(id)
	st, err := setup.GC(ctx, s3chain.GCOptions{Chain: fw.chain})
	if err != nil || st.VoidedBackups != 1 || st.DeletedManifests != 1 {
		t.Errorf("gc of the abandoned manifest: %+v, %v; want it voided and deleted", st, err)
	}
	if s, d := fw.state(id); s != "void" || d != digest {
		t.Errorf("state record of %s: %q for %s, want void for the late manifest %s", id, s, d, digest)
	}
	if fw.manifestDigest(id) != "" {
		t.Error("the voided manifest was not deleted")
	}
	fw.checkReady("instance 1 (late commit)")
}

// Instance 1 on a chain made before state records: the late manifest is
// listed and named by @latest, as it always was, and its restore fails
// naming a block the gc deleted (the defect state records fix).
func TestReadyLateCommitOldChainListed(t *testing.T) {
	fw, setup := readyWorld(t, true)
	id, _ := lateCommit(t, fw, setup)
	ctx := context.Background()
	if got := fw.listedIDs(); !slices.Contains(got, id) {
		t.Fatalf("listed %v: an old chain lists every manifest", got)
	}
	if m, err := setup.Manifest(ctx, fw.chain, "latest"); err != nil || m.ID != id {
		t.Fatalf("@latest is %v (%v), want the late %s", m, err, id)
	}
	_, _, err := setup.Restore(ctx, s3chain.RestoreOptions{Chain: fw.chain, BackupID: "latest", Destination: filepath.Join(fw.dir, "r")})
	if !errors.Is(err, s3chain.ErrCorruptBlock) {
		t.Fatalf("restore of the listed, never confirmed backup: %v; want it to fail naming a block", err)
	}
	t.Logf("old chain: @latest %s does not restore: %v", id, err)
}

// killedInConfirm is instance 2: a writer is killed after its commit,
// during its confirm (its listing of the blocks is held, then dropped).
// It returns the id and the source, which a resume confirms from.
func killedInConfirm(t *testing.T, fw *fenceWorld, id string, image [][]byte) string {
	view, w := fw.actor()
	confirm := view.Hold(storetest.OpList, fw.isBlock, 1)
	src := fw.source(image)
	ctx, kill := context.WithCancel(context.Background())
	run := start(func() error {
		_, _, err := w.Backup(ctx, fw.opts(src, id))
		return err
	})
	if _, ok := reach(t, confirm, run, 5*time.Second); !ok {
		t.Fatalf("the backup made no confirm: %v", run.wait(t))
	}
	if fw.manifestDigest(id) == "" {
		t.Fatal("the confirm came before the commit")
	}
	kill()
	if err := run.wait(t); err == nil {
		t.Fatal("a killed backup reported ready")
	}
	confirm.Release()
	return src
}

// Instance 2: a backup killed between its commit and the end of its
// confirm is not listed; ConfirmBackup (the driver's resume) makes it
// ready, and it then restores byte-identically. A gc within MinAge keeps
// it; one after voids it for good: no resume makes it ready, and its id is
// not taken again.
func TestReadyKilledInConfirm(t *testing.T) {
	fw, setup := readyWorld(t, false)
	ctx := context.Background()
	base := fw.mustBackup(setup, fw.image(1, 4), "")
	img := fw.image(2, 4)
	src := killedInConfirm(t, fw, "resumed", img)
	if got := fw.listedIDs(); !slices.Equal(got, []string{base.ID}) {
		t.Errorf("listed %v while unconfirmed, want only %s", got, base.ID)
	}
	if m, err := setup.Manifest(ctx, fw.chain, "latest"); err != nil || m.ID != base.ID {
		t.Errorf("@latest is %v (%v), want %s", m, err, base.ID)
	}
	fw.waitStale(fw.isLock("writer"))
	if st, err := setup.GC(ctx, s3chain.GCOptions{Chain: fw.chain, MinAge: time.Hour}); err != nil || st.VoidedBackups != 0 || st.DeletedBlocks != 0 {
		t.Errorf("gc within MinAge: %+v, %v; want nothing voided or deleted", st, err)
	}
	if err := setup.ConfirmBackup(ctx, fw.chain, "resumed", src); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if s, d := fw.state("resumed"); s != "ready" || d != fw.manifestDigest("resumed") {
		t.Errorf("state after the resume: %q for %s", s, d)
	}
	fw.ready = append(fw.ready, fenceReady{"resumed", sha(slices.Concat(img...))})
	if got := fw.listedIDs(); !slices.Equal(got, []string{base.ID, "resumed"}) {
		t.Errorf("listed %v after the resume", got)
	}
	fw.checkReady("instance 2 (killed in confirm, resumed)")

	src = killedInConfirm(t, fw, "abandoned", fw.image(3, 4))
	fw.waitStale(fw.isLock("writer"))
	if st, err := setup.GC(ctx, s3chain.GCOptions{Chain: fw.chain}); err != nil || st.VoidedBackups != 1 || st.DeletedManifests != 1 {
		t.Errorf("gc after MinAge: %+v, %v; want the abandoned one voided and deleted", st, err)
	}
	if err := setup.ConfirmBackup(ctx, fw.chain, "abandoned", src); !errors.Is(err, s3chain.ErrBackupNotFound) {
		t.Errorf("resume of a voided backup: %v, want ErrBackupNotFound", err)
	}
	if _, _, err := setup.Backup(ctx, fw.opts(src, "abandoned")); !errors.Is(err, s3chain.ErrBackupExists) {
		t.Errorf("a new backup under the voided id: %v, want ErrBackupExists", err)
	}
	fw.checkReady("instance 2 (killed in confirm, voided)")
}

// failInConfirm makes the next backup through view fail in its confirm:
// the listing of the blocks and every HEAD of one fail.
func failInConfirm(fw *fenceWorld, view *storetest.Faulty) {
	view.FailKeys(storetest.OpList, fw.isBlock, nil)
	view.FailKeys(storetest.OpStat, fw.isBlock, nil)
}

// Instance 3 on a chain made before state records: a failed writer's
// retract reads its manifest, is paused before its DELETE; the backup is
// deleted and its id reused by a new ready backup; the late DELETE removes
// the new backup (the defect). The test asserts the defect is there.
func TestReadyRetractOldChainRemovesReused(t *testing.T) {
	fw, setup := readyWorld(t, true)
	view, w := fw.actor()
	failInConfirm(fw, view)
	retract := view.Hold(storetest.OpDelete, isManifest, 1)
	src := fw.source(fw.image(1, 4))
	run := start(func() error {
		_, _, err := w.Backup(context.Background(), fw.opts(src, "x"))
		return err
	})
	if _, ok := reach(t, retract, run, 5*time.Second); !ok {
		t.Fatalf("the failed backup sent no retract: %v", run.wait(t))
	}
	if err := setup.DeleteBackup(context.Background(), fw.chain, "x"); err != nil {
		t.Fatal(err)
	}
	_, w2 := fw.actor()
	reused := fw.image(2, 4)
	m, _, err := w2.Backup(context.Background(), fw.opts(fw.source(reused), "x"))
	if err != nil {
		t.Fatalf("the reuse of id x: %v", err)
	}
	retract.Release()
	t.Logf("failed writer: %v", run.wait(t))
	if fw.manifestDigest("x") == m.Digest() {
		t.Fatal("the late retract missed: the old protocol's defect is not reproduced")
	}
	t.Logf("old chain: the ready reuse of id x was deleted by the failed writer's late retract")
}

// Instance 3 on a chain with state records: a failed writer sends no
// DELETE at all (its manifest stays unready); a delete of the id voids it
// first and a paused DELETE of it lands late, but the id is never taken
// again, so no ready backup can be under it; another ready backup made
// meanwhile stays listed and restores byte-identically.
func TestReadyNoRetractIDNotReused(t *testing.T) {
	fw, _ := readyWorld(t, false)
	ctx := context.Background()
	view, w := fw.actor()
	failInConfirm(fw, view)
	retract := view.Hold(storetest.OpDelete, isManifest, 1)
	src := fw.source(fw.image(1, 4))
	if _, _, err := w.Backup(ctx, fw.opts(src, "x")); err == nil {
		t.Fatal("the backup whose confirm failed reported ready")
	}
	if n := retract.Arrived(); n != 0 {
		t.Errorf("the failed writer sent %d DELETEs of manifests", n)
	}
	if got := fw.listedIDs(); len(got) != 0 {
		t.Errorf("listed %v: the failed backup is listed", got)
	}
	delView, del := fw.actor()
	late := delView.Hold(storetest.OpDelete, isManifest, 1)
	run := start(func() error { return del.DeleteBackup(ctx, fw.chain, "x") })
	if _, ok := reach(t, late, run, 5*time.Second); !ok {
		t.Fatalf("the delete sent no DELETE: %v", run.wait(t))
	}
	if s, _ := fw.state("x"); s != "void" {
		t.Errorf("the delete's DELETE went before its void record (state %q)", s)
	}
	_, w2 := fw.actor()
	if _, _, err := w2.Backup(ctx, fw.opts(fw.source(fw.image(2, 4)), "x")); !errors.Is(err, s3chain.ErrBackupExists) {
		t.Errorf("reuse of id x: %v, want ErrBackupExists", err)
	}
	other := fw.mustBackup(w2, fw.image(2, 4), "")
	late.Release()
	if err := run.wait(t); err != nil {
		t.Errorf("the paused delete: %v", err)
	}
	if got := fw.listedIDs(); !slices.Equal(got, []string{other.ID}) {
		t.Errorf("listed %v, want %s", got, other.ID)
	}
	fw.checkReady("instance 3 (late DELETE of a reused id)")
}

// A ready record that landed though its PutIfAbsent answered an error is
// read back: the backup reports ready, and is listed.
func TestReadyRecordLostAnswer(t *testing.T) {
	fw, _ := readyWorld(t, false)
	view, w := fw.actor()
	view.Add(storetest.Fault{Op: storetest.OpPutIfAbsent, After: true, Nth: 1,
		Key: func(k string) bool { return strings.HasSuffix(k, ".state") }})
	m := fw.mustBackup(w, fw.image(1, 4), "")
	if s, d := fw.state(m.ID); s != "ready" || d != m.Digest() {
		t.Errorf("state %q for %s, want ready for %s", s, d, m.Digest())
	}
	if got := fw.listedIDs(); !slices.Equal(got, []string{m.ID}) {
		t.Errorf("listed %v", got)
	}
	fw.checkReady("lost answer of the ready record")
}

// A writer paused after its confirm passed, before its ready record lands,
// while the store's clock steps two hours on: its lock and its manifest
// look abandoned, and a gc (MinAge one hour) voids and deletes the
// manifest. Voiding only makes that writer fail: its late ready record
// loses to the void one, it is never listed, and the ready base restores.
func TestReadyVoidWhileConfirming(t *testing.T) {
	fw, setup := readyWorld(t, false)
	base := fw.mustBackup(setup, fw.image(1, 4), "")
	view, w := fw.actor()
	mark := view.Hold(storetest.OpPutIfAbsent, func(k string) bool { return strings.HasSuffix(k, ".state") }, 1)
	src := fw.source(fw.image(2, 4))
	run := start(func() error {
		_, _, err := w.Backup(context.Background(), fw.opts(src, "slow"))
		return err
	})
	if _, ok := reach(t, mark, run, 5*time.Second); !ok {
		t.Fatalf("the backup made no ready record: %v", run.wait(t))
	}
	digest := fw.manifestDigest("slow")
	fw.root.StepClock(2 * time.Hour)
	_, gcRepo := fw.actor()
	st, err := gcRepo.GC(context.Background(), s3chain.GCOptions{Chain: fw.chain, MinAge: time.Hour})
	if err != nil || st.VoidedBackups != 1 || st.DeletedManifests != 1 {
		t.Fatalf("gc after the clock step: %+v, %v; want the confirming backup voided and deleted", st, err)
	}
	mark.Release()
	// ErrChainBusy (voided), or ErrLeaseLost if its lease ran out first.
	if err := run.wait(t); !errors.Is(err, s3chain.ErrChainBusy) && !errors.Is(err, s3chain.ErrLeaseLost) {
		t.Errorf("the voided writer: %v, want ErrChainBusy", err)
	}
	if s, d := fw.state("slow"); s != "void" || d != digest {
		t.Errorf("state %q for %s, want void for %s", s, d, digest)
	}
	if got := fw.listedIDs(); !slices.Equal(got, []string{base.ID}) {
		t.Errorf("listed %v, want only %s", got, base.ID)
	}
	fw.checkReady("a gc voids a backup whose writer still confirms")
}
