package volume

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/chainvol/chainvol/pkg/backend"
)

// refIndex maps backup snapshot ids (Record.BackupRef) to the local
// snapshot lvols that carry them, so that finding a backup's snapshot
// costs one pool Get instead of a scan of every snapshot's labels. It is
// built from one listing of the pool on first use and kept by the
// Manager's CreateSnapshot; deletions are noticed on lookup (each hit is
// checked against the pool), so lvols deleted by any path drop out. The
// pool belongs to one driver process (one per node), whose snapshots with
// a backup reference are all made through CreateSnapshot.
type refIndex struct {
	pool  backend.Pool
	mu    sync.Mutex
	built bool
	ids   map[string][]string // backup snapshot id → lvol ids
}

// build lists the pool's snapshots once. Callers hold x.mu.
func (x *refIndex) build(ctx context.Context) error {
	if x.built {
		return nil
	}
	snaps, err := x.pool.List(ctx, backend.KindSnapshot)
	if err != nil {
		return err
	}
	x.ids = map[string][]string{}
	for _, s := range snaps {
		x.addLocked(s)
	}
	x.built = true
	return nil
}

func (x *refIndex) addLocked(lv backend.LVol) {
	if ref := Of(lv).BackupRef.String(); ref != "" && !slices.Contains(x.ids[ref], lv.ID) {
		x.ids[ref] = append(x.ids[ref], lv.ID)
	}
}

// add indexes a snapshot just created; before the first build the
// listing will see it.
func (x *refIndex) add(lv backend.LVol) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.built {
		x.addLocked(lv)
	}
}

// drop forgets lvol id under ref.
func (x *refIndex) drop(ref, id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dropLocked(ref, id)
}

func (x *refIndex) dropLocked(ref, id string) {
	x.ids[ref] = slices.DeleteFunc(x.ids[ref], func(s string) bool { return s == id })
	if len(x.ids[ref]) == 0 {
		delete(x.ids, ref)
	}
}

// get returns a snapshot lvol carrying ref, the oldest id first.
// Errors: backend.ErrNotFound, those of the pool.
func (x *refIndex) get(ctx context.Context, ref string) (backend.LVol, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.build(ctx); err != nil {
		return backend.LVol{}, err
	}
	for _, id := range slices.Clone(x.ids[ref]) {
		lv, err := x.pool.Get(ctx, id)
		switch {
		case err == nil && lv.Kind == backend.KindSnapshot && Of(lv).BackupRef.String() == ref:
			return lv, nil
		case err == nil || errors.Is(err, backend.ErrNotFound):
			x.dropLocked(ref, id) // deleted (or relabelled) since
		default:
			return backend.LVol{}, err
		}
	}
	return backend.LVol{}, backend.ErrNotFound
}
