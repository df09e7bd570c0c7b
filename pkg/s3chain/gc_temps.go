package s3chain

import (
	"context"
	"fmt"
	"time"

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

// SweepTemps deletes the temporary files of writers killed mid-write (a
// file store's; other stores have none) older than max(minAge,
// MinTempAge), and returns how many files and bytes went. It walks the
// whole target, so a caller collecting one chain at a time (the driver's
// background gc) should call it seldom. Errors: the store's.
func (r *Repo) SweepTemps(ctx context.Context, minAge time.Duration) (files int, bytes int64, err error) {
	var st GCStats
	err = r.sweepTemps(ctx, GCOptions{MinAge: minAge}, &st)
	return st.TempFiles, st.TempBytes, err
}
