package volume

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/chainvol/chainvol/pkg/backend"
)

// Default pool reserve (Config.PoolReserveBytes 0): 5% of the pool's
// filesystem, at most 1 GiB. The percentage keeps a small pool usable; the
// cap keeps a large one from idling hundreds of GiB. It is what
// applications keep for their own writes while restores run (ext4 reports
// "potential data loss" when a delayed allocation meets a full disk).
const (
	defaultReservePercent = 5
	maxDefaultReserve     = 1 << 30
)

// spaceCheckEvery is how often a running restore checks that the pool can
// still hold the rest of it above the reserve.
const spaceCheckEvery = 500 * time.Millisecond

// room is the pool's space as restore admission sees it, in bytes.
type room struct {
	available int64 // statfs f_bavail of the pool's filesystem
	reserve   int64 // Config.PoolReserveBytes or the default
	pending   int64 // still to be allocated by the restores counted
	debt      int64 // copy-on-write debt of reflink copies (backend.Pool.CoWDebt)
}

// free is what a new restore may still allocate: never negative.
func (r room) free() int64 { return max(0, r.available-r.reserve-r.pending-r.debt) }

// short is by how many bytes the restores' pending writes and the
// rewrites of shared extents would take the pool below its reserve: > 0
// when the pool cannot pay what it owes.
func (r room) short() int64 { return r.reserve + r.pending + r.debt - r.available }

func (r room) String() string {
	return fmt.Sprintf("%d bytes available, less a reserve of %d, %d still to be written by running restores and %d that rewrites of shared (reflinked) data may allocate",
		r.available, r.reserve, r.pending, r.debt)
}

// reserve is the free space restores leave in the pool, in bytes.
func (m *Manager) reserve(c backend.Capacity) int64 {
	if m.cfg.PoolReserveBytes > 0 {
		return m.cfg.PoolReserveBytes
	}
	return min(c.TotalBytes*defaultReservePercent/100, maxDefaultReserve)
}

// poolRoom measures the pool against the restores running in it and the
// copy-on-write debt of its reflink copies (snapshots, backup bases,
// clones: docs/ARCHITECTURE.md "Space"). With
// upTo set, only the restores created before it and itself count, oldest
// first: the one guarding itself yields to older ones, never the reverse.
func (m *Manager) poolRoom(ctx context.Context, upTo *backend.LVol) (room, error) {
	c, err := m.pool.Capacity(ctx)
	if err != nil {
		return room{}, err
	}
	vols, err := m.pool.List(ctx, backend.KindVolume)
	if err != nil {
		return room{}, err
	}
	debt, err := m.pool.CoWDebt(ctx)
	if err != nil {
		return room{}, err
	}
	r := room{available: c.AvailableBytes, reserve: m.reserve(c), debt: debt}
	for _, lv := range restoring(vols) {
		if upTo != nil && restoreOrder(lv, *upTo) > 0 {
			break
		}
		r.pending += m.pendingBytes(lv)
	}
	return r, nil
}

// restoring returns the volumes being restored or hydrated, oldest first.
func restoring(vols []backend.LVol) []backend.LVol {
	var out []backend.LVol
	for _, lv := range vols {
		if Of(lv).Phase.filling() {
			out = append(out, lv)
		}
	}
	slices.SortFunc(out, restoreOrder)
	return out
}

func restoreOrder(a, b backend.LVol) int {
	return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
}

// pendingBytes is what the restore of lv has still to allocate: its
// allocation target (Record.RestoreAllocBytes) less the bytes its
// data file holds now.
func (m *Manager) pendingBytes(lv backend.LVol) int64 {
	want := Of(lv).RestoreAllocBytes
	if want == 0 {
		return 0 // restored before admission existed
	}
	path, err := m.pool.DataPath(lv.ID)
	if err != nil {
		return 0
	}
	fi, err := os.Stat(path)
	if err != nil {
		return want
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return max(0, want-st.Blocks*512) // st_blocks: 512-byte units (stat(2))
	}
	return want
}

// Admit creates the lvol of a restore that will allocate need
// bytes, recording rec with need, when the pool can hold them above its
// reserve with every running restore finished and every shared extent
// rewritten; otherwise it creates
// nothing and returns backend.ErrNoSpace naming the numbers (the CSI
// shell answers ResourceExhausted: the provisioner tries another node).
// Other errors: those of Pool.Capacity, List and Create.
func (m *Manager) Admit(ctx context.Context, o backend.CreateOptions, rec Record, need int64) (backend.LVol, error) {
	m.admit.Lock()
	defer m.admit.Unlock()
	r, err := m.poolRoom(ctx, nil)
	if err != nil {
		return backend.LVol{}, err
	}
	if need > r.free() {
		return backend.LVol{}, fmt.Errorf("%w: the restore allocates %d bytes; the pool on node %s has room for %d (%v)",
			backend.ErrNoSpace, need, m.cfg.Node, r.free(), r)
	}
	rec.RestoreAllocBytes = need
	o.Labels = rec.Encode()
	defer m.SpaceChanged() // more pending bytes
	return m.pool.Create(ctx, o)
}

// checkRoom returns backend.ErrNoSpace when finishing the restore of lv,
// after the older running restores, would take the pool below its reserve
// (someone else's writes ate the space admitted for it).
//
// Backup bases are dropped first (keepBudget): a restore outranks them.
func (m *Manager) checkRoom(ctx context.Context, lv backend.LVol) error {
	r, err := m.poolRoom(ctx, &lv)
	if err == nil && r.short() > 0 {
		_, _ = m.keepBudget(ctx)
		r, err = m.poolRoom(ctx, &lv)
	}
	if err != nil || r.short() <= 0 {
		return nil // a failed statfs says nothing about space
	}
	return fmt.Errorf("%w: the pool on node %s can no longer hold the rest of this restore above its reserve (%v); it was stopped and its volume removed",
		backend.ErrNoSpace, m.cfg.Node, r)
}

// guardRoom runs checkRoom every spaceCheckEvery until ctx ends, and
// cancels the restore with its error as the cause when it fails.
func (m *Manager) guardRoom(ctx context.Context, lv backend.LVol, stop context.CancelCauseFunc) {
	t := time.NewTicker(spaceCheckEvery)
	defer t.Stop()
	for {
		if err := m.checkRoom(ctx, lv); err != nil {
			stop(err)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Free is what a new restore may still allocate in the pool, in bytes:
// available less the reserve, what running restores will still write and
// what rewriting the reflink copies' shared extents may allocate (what
// Admit accepts). Errors: those of the pool.
func (m *Manager) Free(ctx context.Context) (int64, error) {
	r, err := m.poolRoom(ctx, nil)
	return r.free(), err
}
