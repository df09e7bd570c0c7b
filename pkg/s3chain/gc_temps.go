package s3chain

import (
	"context"
	"fmt"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// sweepTemps deletes (in a dry run counts) the temporary files that
// writers killed mid-write left in the store (only a file store has them,
// store.TempSweeper), older than max(o.MinAge, MinTempAge), into st. It
// is part of a gc of every chain only: temporary files belong to no chain
// a gc of one chain could name, and sweeping the whole target for each
// chain the driver's background gc collects would be wasted work.
// Errors: the store's, with the counts of what went before.
func (r *Repo) sweepTemps(ctx context.Context, o GCOptions, st *GCStats) error {
	if o.Chain != "" {
		return nil
	}
	files, bytes, err := store.SweepTemps(ctx, r.store, max(o.MinAge, MinTempAge), o.DryRun)
	st.TempFiles += files
	st.TempBytes += bytes
	if err != nil {
		return fmt.Errorf("gc of temporary files: %w", err)
	}
	return nil
}
