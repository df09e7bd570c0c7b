package driver

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/chainvol/chainvol/pkg/backend"
)

// labelRestoreAlloc records on a restoring volume the bytes its restore
// allocates in the pool in all (the manifest's AllocatedBytes: the
// backup's non-zero blocks), from which what is still to come follows.
const labelRestoreAlloc = "restoreAllocatedBytes"

// Default pool reserve (Options.PoolReserveBytes 0): 5% of the pool's
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
	reserve   int64 // Options.PoolReserveBytes or the default
	pending   int64 // still to be allocated by the restores counted
}

// free is what a new restore may still allocate: never negative.
func (r room) free() int64 { return max(0, r.available-r.reserve-r.pending) }

func (r room) String() string {
	return fmt.Sprintf("%d bytes available, less a reserve of %d and %d still to be written by running restores", r.available, r.reserve, r.pending)
}

// reserve is the free space restores leave in the pool, in bytes.
func (d *Driver) reserve(c backend.Capacity) int64 {
	if d.opts.PoolReserveBytes > 0 {
		return d.opts.PoolReserveBytes
	}
	return min(c.TotalBytes*defaultReservePercent/100, maxDefaultReserve)
}

// poolRoom measures the pool against the restores running in it. With
// upTo set, only the restores created before it and itself count, oldest
// first: the one guarding itself yields to older ones, never the reverse.
func (d *Driver) poolRoom(ctx context.Context, upTo *backend.LVol) (room, error) {
	c, err := d.pool.Capacity(ctx)
	if err != nil {
		return room{}, err
	}
	vols, err := d.pool.List(ctx, backend.KindVolume)
	if err != nil {
		return room{}, err
	}
	r := room{available: c.AvailableBytes, reserve: d.reserve(c)}
	for _, lv := range restoring(vols) {
		if upTo != nil && restoreOrder(lv, *upTo) > 0 {
			break
		}
		r.pending += d.pendingBytes(lv)
	}
	return r, nil
}

// restoring returns the volumes being restored, oldest first.
func restoring(vols []backend.LVol) []backend.LVol {
	var out []backend.LVol
	for _, lv := range vols {
		if lv.Labels[labelState] == stateRestoring {
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
// allocation target less the bytes its data file holds now.
func (d *Driver) pendingBytes(lv backend.LVol) int64 {
	want, err := strconv.ParseInt(lv.Labels[labelRestoreAlloc], 10, 64)
	if err != nil {
		return 0 // restored before admission existed
	}
	path, err := d.pool.DataPath(lv.ID)
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

// admitRestore creates the lvol of a restore that will allocate need
// bytes, when the pool can hold them above its reserve with every running
// restore finished; otherwise it creates nothing and returns
// backend.ErrNoSpace naming the numbers (ResourceExhausted: the
// provisioner then tries another node).
func (d *Driver) admitRestore(ctx context.Context, o backend.CreateOptions, need int64) (backend.LVol, error) {
	d.admit.Lock()
	defer d.admit.Unlock()
	r, err := d.poolRoom(ctx, nil)
	if err != nil {
		return backend.LVol{}, err
	}
	if need > r.free() {
		return backend.LVol{}, fmt.Errorf("%w: the restore allocates %d bytes; the pool on node %s has room for %d (%v)",
			backend.ErrNoSpace, need, d.opts.NodeID, r.free(), r)
	}
	o.Labels[labelRestoreAlloc] = strconv.FormatInt(need, 10)
	return d.pool.Create(ctx, o)
}

// checkRoom returns backend.ErrNoSpace when finishing the restore of lv,
// after the older running restores, would take the pool below its reserve
// (someone else's writes ate the space admitted for it).
func (d *Driver) checkRoom(ctx context.Context, lv backend.LVol) error {
	r, err := d.poolRoom(ctx, &lv)
	if err != nil || r.available-r.pending >= r.reserve {
		return nil // a failed statfs says nothing about space
	}
	return fmt.Errorf("%w: the pool on node %s can no longer hold the rest of this restore above its reserve (%v); it was stopped and its volume removed",
		backend.ErrNoSpace, d.opts.NodeID, r)
}

// guardRoom runs checkRoom every spaceCheckEvery until ctx ends, and
// cancels the restore with its error as the cause when it fails.
func (d *Driver) guardRoom(ctx context.Context, lv backend.LVol, stop context.CancelCauseFunc) {
	t := time.NewTicker(spaceCheckEvery)
	defer t.Stop()
	for {
		if err := d.checkRoom(ctx, lv); err != nil {
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
