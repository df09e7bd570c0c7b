package volume

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/internal/trylock"
	"github.com/chainvol/chainvol/pkg/backend"
)

// testPool opens a pool on a real reflink XFS loop filesystem.
func testPool(t *testing.T) *backend.FilePool {
	t.Helper()
	testutil.RequireRoot(t)
	fs := testutil.LoopFS(t, "xfs", 2<<30)
	pool, err := backend.Open(filepath.Join(fs, "pool"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	return pool
}

// TestBackupIndex: a backup's local snapshot is found by its snapshot id
// without a pool scan, whether it was made before the manager existed
// (pool listing) or through it; one deleted behind the index's back, or
// relabelled, is not found; DeleteSnapshotsOfBackup stops its upload job
// and deletes it.
func TestBackupIndex(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	src, err := pool.Create(ctx, backend.CreateOptions{Name: "v", Kind: backend.KindVolume, SizeBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	// Made by an older driver process: only the listing knows it.
	old, err := pool.Create(ctx, backend.CreateOptions{Name: "old", Kind: backend.KindSnapshot, SourceID: src.ID,
		Labels: map[string]string{"hidden": "true", "backupRef": "backup:t:c@1", "backupState": "done"}})
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(pool, Config{StateDir: t.TempDir(), Node: "node-1"})
	if got, err := m.SnapshotOfBackup(ctx, "backup:t:c@1"); err != nil || got.ID != old.ID {
		t.Fatalf("old snapshot: %v %v", got.ID, err)
	}
	snap := func(name, ref string) backend.LVol {
		lv, err := m.CreateSnapshot(ctx, backend.CreateOptions{Name: name, SourceID: src.ID},
			Record{Hidden: true, BackupRef: ReadID(ref), Upload: Uploading})
		if err != nil {
			t.Fatal(err)
		}
		return lv
	}
	s2, s3 := snap("s2", "backup:t:c@2"), snap("s3", "backup:t:c@3")
	if got, err := m.SnapshotOfBackup(ctx, "backup:t:c@2"); err != nil || got.ID != s2.ID {
		t.Fatalf("new snapshot: %v %v", got.ID, err)
	}
	if _, err := m.SnapshotOfBackup(ctx, "backup:t:c@9"); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("unknown ref: %v, want ErrNotFound", err)
	}
	if err := pool.Delete(ctx, old.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.SnapshotOfBackup(ctx, "backup:t:c@1"); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("deleted snapshot: %v, want ErrNotFound", err)
	}
	if _, err := pool.SetLabels(ctx, s3.ID, map[string]string{"backupRef": ""}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.SnapshotOfBackup(ctx, "backup:t:c@3"); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("relabelled snapshot: %v, want ErrNotFound", err)
	}
	running, stopped := make(chan struct{}), make(chan struct{})
	m.StartJob(s2.ID, "backup upload", func(ctx context.Context, _ *Job) error {
		close(running)
		<-ctx.Done()
		close(stopped)
		return ctx.Err()
	})
	<-running
	if err := m.DeleteSnapshotsOfBackup(ctx, "backup:t:c@2"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("the upload job of a deleted backup snapshot still runs")
	}
	if _, err := pool.Get(ctx, s2.ID); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("snapshot of a deleted backup: %v, want ErrNotFound", err)
	}
}

// TestUpdateKeepsOtherWriters: Update writes only what it changed, so
// two writers of different fields of one record, at once, both land (the
// upload's outcome and the CO's "reported" acknowledgement).
func TestUpdateKeepsOtherWriters(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	lv, err := pool.Create(ctx, backend.CreateOptions{Name: "v", Kind: backend.KindVolume, SizeBytes: 1 << 20,
		Labels: Record{BackupRef: ReadID("backup:t:c@1"), Upload: UploadFailed, UploadError: "boom", Unreported: true, FSType: "xfs"}.Encode()})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			change := func(r *Record) { r.Unreported = false }
			if i%2 == 0 {
				change = func(r *Record) { r.Upload, r.UploadError = Uploaded, "" }
			}
			if _, err := Update(ctx, pool, lv.ID, change); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err := pool.Get(ctx, lv.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := Record{BackupRef: ReadID("backup:t:c@1"), Upload: Uploaded, FSType: "xfs"}
	if r := Of(got); r != want {
		t.Fatalf("record %+v, want %+v (labels %v)", r, want, got.Labels)
	}
	if _, err := Update(ctx, pool, "vol-00000000000000000000", func(*Record) {}); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("update of an unknown lvol: %v", err)
	}
}

// TestReady: Ready tells a volume being restored (ErrNotReady, which is
// also backend.ErrNotFound) from a missing one and from a snapshot.
func TestReady(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	m := NewManager(pool, Config{StateDir: t.TempDir(), Node: "node-1"})
	restoring, err := pool.Create(ctx, backend.CreateOptions{Name: "r", Kind: backend.KindVolume, SizeBytes: 1 << 20,
		Labels: Record{Phase: PhaseRestoring, RestoreRef: ReadRef("t:c@1")}.Encode()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Ready(ctx, backend.KindVolume, restoring.ID); !errors.Is(err, ErrNotReady) || !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("restoring volume: %v", err)
	}
	if lv, err := m.Lookup(ctx, backend.KindVolume, restoring.ID); err != nil || lv.ID != restoring.ID {
		t.Fatalf("lookup of a restoring volume: %v", err)
	}
	if _, err := m.Ready(ctx, backend.KindSnapshot, restoring.ID); errors.Is(err, ErrNotReady) || !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("volume looked up as a snapshot: %v", err)
	}
	if _, err := Update(ctx, pool, restoring.ID, func(r *Record) { r.Phase = PhaseReady }); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Ready(ctx, backend.KindVolume, restoring.ID); err != nil {
		t.Fatalf("restored volume: %v", err)
	}
}

// TestSharedLocks: TakeSnapshot holds its source's id in the caller's set
// (Config.Locks): while the caller holds that id it answers ErrBusy and
// takes nothing, and it leaves the id free when it is done. (The set's
// all-or-none rule is internal/trylock's TestAllOrNone.)
func TestSharedLocks(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	locks := trylock.New()
	m := NewManager(pool, Config{StateDir: t.TempDir(), Node: "node-1", Locks: locks,
		Freezer: FreezerFunc(func(context.Context, string) (func(), error) { return func() {}, nil })})
	src, err := pool.Create(ctx, backend.CreateOptions{Name: "v", Kind: backend.KindVolume, SizeBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if !locks.TryLock(src.ID) {
		t.Fatal("lock")
	}
	if _, err := m.TakeSnapshot(ctx, "s", src.ID, Record{}); !errors.Is(err, ErrBusy) || Classify(err) != ClassBusy {
		t.Fatalf("snapshot of a source the caller holds: %v, want ErrBusy", err)
	}
	if _, err := pool.GetByName(ctx, backend.KindSnapshot, "s"); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("a busy snapshot took its lvol: %v", err)
	}
	locks.Unlock(src.ID)
	if _, err := m.TakeSnapshot(ctx, "s", src.ID, Record{}); err != nil {
		t.Fatal(err)
	}
	if !locks.TryLock(src.ID) {
		t.Fatal("TakeSnapshot left its source's id held")
	}
}

// TestLocksAndFailures: chain locks serialise, and a kept failure is
// reported once.
func TestLocksAndFailures(t *testing.T) {
	m := NewManager(nil, Config{StateDir: t.TempDir()})
	var n, peak atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock := m.LockChain("t", "c")
			defer unlock()
			if v := n.Add(1); v > peak.Load() {
				peak.Store(v)
			}
			time.Sleep(time.Millisecond)
			n.Add(-1)
		}()
	}
	wg.Wait()
	if peak := peak.Load(); peak != 1 {
		t.Fatalf("%d uploads of one chain ran at once", peak)
	}
	m.setFailure("pvc-1", fmt.Errorf("restore failed: %w", ErrBusy))
	if err := m.takeFailure("pvc-1"); !errors.Is(err, ErrBusy) {
		t.Fatalf("kept failure: %v", err)
	}
	if err := m.takeFailure("pvc-1"); err != nil {
		t.Fatalf("failure reported twice: %v", err)
	}
}
