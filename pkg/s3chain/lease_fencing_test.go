package s3chain_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// The reproducers of issue 24: schedules in which an actor pauses between
// a check and its effect, or the store's clock misleads the lease checks.
// Each checks the invariant: every backup Backup reported ready restores
// byte-identically once every paused request was released. They fail on
// the version-2 protocol, whose safety rests on timing (leases), and are
// to pass with version 3 (safety without timing).

// gcDeletePaused starts a gc of fw's chain with a view that holds its
// first DELETE of matching keys; once it arrives the gc's whole process is
// paused (its lock refreshes too) and its lock is left to age past the
// TTL. It returns the gc, the held key ("" if the gc finished without such
// a DELETE) and release, which lets every held request land.
func gcDeletePaused(fw *fenceWorld, match func(string) bool) (*actorRun, string, func()) {
	view, repo := fw.actor()
	del := view.Hold(storetest.OpDelete, match, 1)
	gc := start(func() error {
		_, err := repo.GC(context.Background(), s3chain.GCOptions{Chain: fw.chain})
		return err
	})
	key, ok := reach(fw.t, del, gc, 5*time.Second)
	if !ok {
		return gc, "", del.Release
	}
	pause := view.Hold(storetest.OpAny, nil, 0)
	fw.waitStale(fw.isLock("gc"))
	return gc, key, func() { del.Release(); pause.Release() }
}

// Defect 1 (issue 24): a gc paused between its lease check and its DELETE
// of an orphan block, its lock refreshes paused too, ages past the TTL; a
// backup judges the gc lock stale, stores a block whose digest is the
// orphan's, commits and reports ready; then the gc's DELETE lands. The
// ready backup, and the next incremental on top of it, must restore.
func TestFencingGCDeleteAfterStaleLock(t *testing.T) {
	fw := newFenceWorld(t, 200*time.Millisecond, nil)
	_, setup := fw.actor()
	fw.mustBackup(setup, fw.image(1, 4), "")
	orphans := fw.image(2, 4)
	fw.delete(setup, fw.mustBackup(setup, orphans, "").ID)

	gc, key, release := gcDeletePaused(fw, fw.isBlock)
	if key == "" {
		t.Fatalf("the gc deleted no orphan block: %v", gc.wait(t))
	}
	_, wRepo := fw.actor()
	w := fw.mustBackup(wRepo, orphans, "") // the orphans' blocks again
	d, idx := digestOf(w, fw.chain, key)
	if d == "" {
		t.Fatalf("the ready backup does not store the block %s the gc is deleting", key)
	}
	release()
	t.Logf("paused gc, released: %v", gc.wait(t))

	next := append([][]byte{}, orphans...)
	next[(idx+1)%int64(len(next))] = fw.image(3, 1)[0] // change another block: the orphan's is reused
	fw.mustBackup(wRepo, next, w.ID)
	fw.checkReady("defect 1 (gc DELETE lands after its lock went stale)")
}

// Defect 1b (issue 24): the same pause in the gc's deletion of an emptied
// chain's config (dropEmptyChain): a backup opens and uses the config
// during the pause and reports ready; after the release it must still be
// listed and restore, and a following backup must not break the listing
// (its manifest "fails its MAC" under a config made anew).
func TestFencingGCConfigDeleteAfterStaleLock(t *testing.T) {
	fw := newFenceWorld(t, 200*time.Millisecond, nil)
	_, setup := fw.actor()
	fw.delete(setup, fw.mustBackup(setup, fw.image(1, 4), "").ID)

	gc, key, release := gcDeletePaused(fw, fw.isConfig)
	t.Logf("gc held at %q", key) // "": the gc keeps the config
	_, wRepo := fw.actor()
	fw.mustBackup(wRepo, fw.image(2, 4), "")
	release()
	t.Logf("paused gc, released: %v", gc.wait(t))
	fw.checkReady("defect 1b (gc deletes the config of a chain a backup uses)")

	_, later := fw.actor()
	fw.mustBackup(later, fw.image(3, 4), "")
	fw.checkReady("defect 1b, after a following backup")
}

// Defect 2 (issue 24): a refresher resurrects its lock. The writer's
// refresh Stat passes and its Put is held; the gc, whose gateway's clock is
// ahead by more than the TTL, deletes the writer lock as abandoned and
// frees the writer's blocks; the held Put recreates the lock, so the
// writer's post-commit check passes: the ready backup must restore.
func TestFencingRefreshResurrectsLock(t *testing.T) {
	ttl := 2 * time.Second // the writer's lease stays valid throughout: nothing waits for it
	fw := newFenceWorld(t, ttl, nil)
	_, setup := fw.actor()
	fw.mustBackup(setup, fw.image(1, 4), "") // the chain is not emptied

	wView, wRepo := fw.actor()
	refresh := wView.Hold(storetest.OpPut, fw.isLock("writer"), 2) // the 1st is the lock's creation
	commit := wView.Hold(storetest.OpPutIfAbsent, func(k string) bool {
		return strings.HasPrefix(k, "manifests/")
	}, 1)
	img := fw.image(2, 4)
	w := start(func() error { _, err := fw.backup(wRepo, img, ""); return err })
	if _, ok := reach(t, commit, w, 5*time.Second); !ok {
		t.Fatalf("the backup never committed: %v", w.wait(t))
	}
	_, refreshed := reach(t, refresh, w, ttl/2) // the first refresh comes after ttl/5
	gcView, gcRepo := fw.actor()
	gcView.SkewClock(3 * ttl)
	st, err := gcRepo.GC(context.Background(), s3chain.GCOptions{Chain: fw.chain})
	t.Logf("gc beside the writer (its refresh held: %v): %+v, %v", refreshed, st, err)
	refresh.Release()
	commit.Release()
	t.Logf("writer: %v", w.wait(t))
	fw.checkReady("defect 2 (a held refresh recreates a lock the gc deleted)")
}

// Defect 3 (issue 24): the store's clock steps forward by more than the
// TTL while a gc sweeps: a writer then judges the gc lock dead, backs up
// the very blocks the gc is deleting and reports ready beside the sweep
// (the issue saw 26 of 32 blocks missing). Its backup must restore.
func TestFencingClockStepDuringGC(t *testing.T) {
	ttl := 2 * time.Second // the gc's lease stays valid throughout
	fw := newFenceWorld(t, ttl, nil)
	_, setup := fw.actor()
	fw.mustBackup(setup, fw.image(1, 4), "")
	orphans := fw.image(2, 8)
	fw.delete(setup, fw.mustBackup(setup, orphans, "").ID)

	gcView, gcRepo := fw.actor()
	del := gcView.Hold(storetest.OpDelete, fw.isBlock, 1)
	gc := start(func() error {
		_, err := gcRepo.GC(context.Background(), s3chain.GCOptions{Chain: fw.chain})
		return err
	})
	if _, ok := reach(t, del, gc, 5*time.Second); !ok {
		t.Fatalf("the gc deleted no orphan block: %v", gc.wait(t))
	}
	// Its refreshes wait until the writer took its lock, so that none lands
	// between the step and the writer's look at the gc lock.
	refresh := gcView.Hold(storetest.OpPut, fw.isLock("gc"), 0)
	fw.root.StepClock(3 * ttl)
	_, wRepo := fw.actor()
	fw.mustBackup(wRepo, orphans, "")
	refresh.Release()
	del.Release()
	if err := gc.wait(t); err != nil {
		t.Logf("gc: %v", err)
	}
	fw.checkReady("defect 3 (a forward step of the store's clock during a gc)")
}

// noCondRace runs defect 4's schedule on a store without If-None-Match:
// writers A and B find no config and both send one; A's lands, C opens it
// and backs up, then B's lands over it. It returns the three backups'
// errors; where a protocol never sends a config, the gates just let go.
func noCondRace(fw *fenceWorld) (errA, errB, errC error) {
	aView, aRepo := fw.actor()
	bView, bRepo := fw.actor()
	_, cRepo := fw.actor()
	aGate := aView.Hold(storetest.OpPut, fw.isConfig, 1)
	bGate := bView.Hold(storetest.OpPut, fw.isConfig, 1)
	imgA, imgB := fw.image(1, 4), fw.image(2, 4)
	a := start(func() error { _, err := fw.backup(aRepo, imgA, ""); return err })
	b := start(func() error { _, err := fw.backup(bRepo, imgB, ""); return err })
	_, okA := reach(fw.t, aGate, a, 5*time.Second)
	_, okB := reach(fw.t, bGate, b, 5*time.Second)
	if okA && okB {
		aGate.ReleaseNext()
	}
	_, errC = fw.backup(cRepo, fw.image(3, 4), "")
	bGate.Release()
	aGate.Release()
	return a.wait(fw.t), b.wait(fw.t), errC
}

// Defect 4 (issue 24): two writers create a chain's config at once on a
// store without conditional writes, and a third opens the first config
// before the second replaces it. Such a store must be refused for writes,
// with an error wrapping store.ErrNotAtomic and store.ErrBadTarget, and
// nothing may be written under chains/.
func TestFencingNoConditionalWritesRefused(t *testing.T) {
	fw := newFenceWorld(t, 4*time.Second, storetest.NewFaulty(storetest.NewMem()).WithoutConditionalWrites())
	errA, errB, errC := noCondRace(fw)
	for name, err := range map[string]error{"A": errA, "B": errB, "C": errC} {
		if !errors.Is(err, store.ErrNotAtomic) || !errors.Is(err, store.ErrBadTarget) {
			t.Errorf("defect 4: backup %s on a store without conditional writes: %v; want an error wrapping ErrNotAtomic and ErrBadTarget", name, err)
		}
	}
	_ = fw.root.List(context.Background(), "chains/", func(oi store.ObjectInfo) error {
		t.Errorf("defect 4: written on a store without conditional writes: %s", oi.Key)
		return nil
	})
}

// Defect 4, whatever the protocol does with such a store: no backup
// reported ready fails to restore.
func TestFencingNoConditionalWritesReadyRestores(t *testing.T) {
	fw := newFenceWorld(t, 4*time.Second, storetest.NewFaulty(storetest.NewMem()).WithoutConditionalWrites())
	errA, errB, errC := noCondRace(fw)
	t.Logf("A: %v; B: %v; C: %v; %d ready", errA, errB, errC, len(fw.ready))
	fw.checkReady("defect 4 (configs created at once without If-None-Match)")
}
