package volume

import (
	"context"

	"github.com/chainvol/chainvol/pkg/backend"
)

// Of returns the record kept on lv (Decode of its labels).
func Of(lv backend.LVol) Record { return Decode(lv.Labels) }

// Update reads the record of lvol id afresh, applies change to it and
// writes back what changed (Record.Patch), so that fields it does not
// change keep what concurrent writers stored. It returns the updated lvol.
// Errors: those of Pool.Get and Pool.SetLabels (backend.ErrNotFound).
func Update(ctx context.Context, pool backend.Pool, id string, change func(*Record)) (backend.LVol, error) {
	lv, err := pool.Get(ctx, id)
	if err != nil {
		return lv, err
	}
	old := Of(lv)
	r := old
	change(&r)
	p := r.Patch(old)
	if len(p) == 0 {
		return lv, nil
	}
	return pool.SetLabels(ctx, id, p)
}
