package volume

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
)

// Backup bases are an optimisation with a budget: a base costs nothing
// when taken but up to its whole allocated size as its volume's data
// diverges from it (backend.Pool.CoWDebt counts that). When the pool can
// no longer pay what it owes above its reserve (room.short: restores'
// pending writes plus the copy-on-write debt), keepBudget drops the
// oldest reported uploaded bases until it can, before an application's
// write meets ENOSPC. A dropped base only makes the chain's next backup
// read and compare every block (pickParent falls back to the latest
// manifest without a base).

// Space watch periods: statfs (cheap) every spaceWatchEvery against the
// debt and pending bytes last measured; a full measure (FIEMAP of every
// lvol) when that statfs says the reserve may be short, when SpaceChanged
// is called, and every spaceMeasureEvery. Rewrites of shared data lower
// the available bytes and the debt alike, and restores' writes their
// pending bytes, so stale numbers err on the side of measuring again;
// what raises them calls SpaceChanged (an admitted restore) or
// ReflinkMade (a reflink copy: its source's allocated bytes added to a
// bound of the debt, measured only when the bound could break the
// reserve).
const (
	spaceWatchEvery   = 100 * time.Millisecond
	spaceMeasureEvery = 30 * time.Second
)

// BasesDroppedForSpace is the number of backup bases keepBudget deleted
// because the pool could not pay for them (the metric
// chainvol_backup_bases_dropped_total{reason="space"}).
func (m *Manager) BasesDroppedForSpace() int64 { return m.droppedForSpace.Load() }

// SpaceChanged tells the space watch (WatchSpace) that the copy-on-write
// debt may have grown (a snapshot or clone was made), so that it measures
// now rather than at its next period. It never blocks.
func (m *Manager) SpaceChanged() {
	select {
	case m.spaceKick <- struct{}{}:
	default:
	}
}

// ReflinkMade tells the space watch that a snapshot or clone of lvol
// sourceID was made: the copy-on-write debt grew by at most the source's
// allocated bytes (each of them is now shared once more). The watch
// counts that bound against its statfs at its next period and measures
// again only when the bound could take the pool below its reserve,
// rather than at once (SpaceChanged): a measure reads the extent map of
// every lvol, and the one after a snapshot held the source's inode lock
// against the reflink of the clone that followed it (docs/BENCHMARKS.md,
// session 10). When the source cannot be stat'ed, it is SpaceChanged.
// It never blocks.
func (m *Manager) ReflinkMade(sourceID string) {
	var st unix.Stat_t
	path, err := m.pool.DataPath(sourceID)
	if err == nil {
		err = unix.Stat(path, &st)
	}
	if err != nil {
		m.SpaceChanged()
		return
	}
	m.debtBound.Add(st.Blocks * 512)
}

// WatchSpace keeps the bases' budget (keepBudget) until ctx ends; the
// driver runs it for its lifetime. See spaceWatchEvery for its costs.
func (m *Manager) WatchSpace(ctx context.Context) {
	t := time.NewTicker(spaceWatchEvery)
	defer t.Stop()
	var last room
	var at time.Time
	kicked := true
	for {
		c, err := m.pool.Capacity(ctx)
		grown := m.debtBound.Load() // reflinks since the last measure began (ReflinkMade)
		stale := kicked || time.Since(at) >= spaceMeasureEvery ||
			(err == nil && (room{available: c.AvailableBytes, reserve: last.reserve, pending: last.pending, debt: last.debt + grown}).short() > 0)
		if stale {
			if r, err := m.keepBudget(ctx); err == nil {
				last, at = r, time.Now()
				m.debtBound.Add(-grown) // measured; later reflinks stay counted
			}
		}
		kicked = false
		select {
		case <-ctx.Done():
			return
		case <-m.spaceKick:
			kicked = true
		case <-t.C:
		}
	}
}

// keepBudget measures the pool and, when it is short of its reserve,
// deletes the oldest droppable bases (droppableBases) just enough to
// cover the shortfall, as far as they can; it returns the room after the
// drops. Errors: those of poolRoom (nothing is dropped).
func (m *Manager) keepBudget(ctx context.Context) (room, error) {
	m.sweep.Lock() // one deleter of bases at a time (SweepBases)
	defer m.sweep.Unlock()
	r, err := m.poolRoom(ctx, nil)
	if err != nil || r.short() <= 0 {
		return r, err
	}
	drop, after, unlock := m.chooseDrops(ctx, r)
	defer unlock()
	why := fmt.Sprintf("the pool on node %s is %d bytes short of its reserve (%v)", m.cfg.Node, r.short(), r)
	for _, b := range drop {
		if m.deleteBase(b, why) {
			m.droppedForSpace.Add(1)
		}
	}
	if after.short() > 0 {
		klog.InfoS("pool space short of its reserve with no backup base left to drop", "node", m.cfg.Node, "room", after.String())
	}
	return after, nil
}

// chooseDrops picks the droppable bases, oldest first, until the debt
// without them (measured before they are deleted: XFS frees a deleted
// file's blocks in the background) covers r's shortfall. It holds the
// chain lock of each chosen base, so that no upload picks it as its
// parent meanwhile; bases of a chain whose upload runs are skipped.
// It returns the chosen bases, the room without them and the release of
// the locks.
func (m *Manager) chooseDrops(ctx context.Context, r room) ([]backend.LVol, room, func()) {
	var drop []backend.LVol
	var ids []string
	held := map[string]func(){}
	unlock := func() {
		for _, u := range held {
			u()
		}
	}
	for _, b := range m.droppableBases(ctx) {
		k, _ := baseChain(b)
		if held[k] == nil {
			mu, _ := m.chainLocks.LoadOrStore(k, &sync.Mutex{})
			if !mu.(*sync.Mutex).TryLock() {
				continue // its chain's upload may be reading it
			}
			held[k] = mu.(*sync.Mutex).Unlock
		}
		drop, ids = append(drop, b), append(ids, b.ID)
		debt, err := m.pool.CoWDebt(ctx, ids...)
		if err != nil {
			break
		}
		if r.debt = debt; r.short() <= 0 {
			break
		}
	}
	return drop, r, unlock
}

// droppableBases returns the backup bases that only serve the next
// incremental backup (uploaded and reported: the name's record answers
// for them), oldest upload first. Bases being uploaded, failed (still to
// be retried) or not yet reported are kept.
func (m *Manager) droppableBases(ctx context.Context) []backend.LVol {
	snaps, err := m.pool.List(ctx, backend.KindSnapshot)
	if err != nil {
		return nil
	}
	var out []backend.LVol
	for _, s := range snaps {
		if _, ok := baseChain(s); ok && Of(s).Hidden && !Of(s).Unreported {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b backend.LVol) int {
		switch {
		case newer(a, b):
			return 1
		case newer(b, a):
			return -1
		}
		return 0
	})
	return out
}
