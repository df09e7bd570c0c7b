package backend

import (
	"context"
	"fmt"
)

// Resize grows the lvol id to newSize bytes rounded up to 4096: it extends
// the data file (sparse, so no blocks are allocated), fsyncs it, then records
// the size. A newSize at or below the current size is a no-op returning the
// current lvol, since shrinking would cut a filesystem inside it (CSI spec,
// "ControllerExpandVolume" only grows). A crash between the two steps leaves
// a file larger than its record, which the next Open rolls forward.
// Errors: ErrNotFound, ErrInvalid (negative size), ErrNoSpace (see
// checkFits), ctx's error.
func (p *FilePool) Resize(ctx context.Context, id string, newSize int64) (LVol, error) {
	if !ValidID(id) {
		return LVol{}, fmt.Errorf("malformed id %q: %w", id, ErrNotFound)
	}
	if err := ctx.Err(); err != nil {
		return LVol{}, err
	}
	size, err := roundSize(newSize)
	if err != nil {
		return LVol{}, err
	}
	defer p.locks.lock(idKey(id))()
	r, err := p.readyRecord(id)
	if err != nil || size <= r.SizeBytes {
		return r.LVol, err
	}
	if err := p.checkFits(ctx, size); err != nil {
		return LVol{}, err
	}
	if err := growFile(p.dataPath(id), size); err != nil {
		return LVol{}, err
	}
	crashPoint("resize:grown")
	r, err = p.meta.update(id, func(r *record) error {
		r.SizeBytes = size
		return nil
	})
	if err != nil {
		return LVol{}, err
	}
	crashPoint("resize:recorded")
	return r.LVol, nil
}

// SetLabels merges labels into the labels of the ready lvol id in one
// transaction (an empty value deletes its key) and returns the updated lvol.
// Errors: ErrNotFound (also for a malformed id).
func (p *FilePool) SetLabels(ctx context.Context, id string, labels map[string]string) (LVol, error) {
	if !ValidID(id) {
		return LVol{}, fmt.Errorf("malformed id %q: %w", id, ErrNotFound)
	}
	r, err := p.meta.update(id, func(r *record) error {
		if r.State != stateReady {
			return fmt.Errorf("lvol %s is %s: %w", id, r.State, ErrNotFound)
		}
		r.Labels = mergeLabels(r.Labels, labels)
		return nil
	})
	return r.LVol, err
}
