package store

import (
	"context"
	"time"
)

// TempSweeper is the optional capability of a Store that leaves
// temporary files of its own beside the objects, and can remove them: the
// file store, whose writer killed between creating `KEY~tmpNNN` and
// renaming (or linking) it leaves that file behind, invisible to List and
// so to gc, for ever. An S3 store has nothing of the kind (a PutObject
// that never completes stores nothing), so it does not implement it.
// Wrappers (NewRetryStore, storetest.Faulty) pass it through to the store
// they wrap; call it through SweepTemps.
type TempSweeper interface {
	// SweepTemps removes the store's temporary files whose modification
	// time is at least olderThan ago (by the local clock), or with dryRun
	// only counts them. It returns how many files, and how many bytes
	// (their sizes), it removed (or would). It never touches an object.
	// Errors: ctx's, and filesystem errors other than a file gone
	// meanwhile; the counts then cover what was removed before.
	SweepTemps(ctx context.Context, olderThan time.Duration, dryRun bool) (files int, bytes int64, err error)
}

// SweepTemps is s.SweepTemps when s is a TempSweeper, else nothing to do
// (0, 0, nil). See TempSweeper.
func SweepTemps(ctx context.Context, s Store, olderThan time.Duration, dryRun bool) (files int, bytes int64, err error) {
	if ts, ok := s.(TempSweeper); ok {
		return ts.SweepTemps(ctx, olderThan, dryRun)
	}
	return 0, 0, nil
}

// SweepTemps passes the inner store's capability through, unretried: only
// a local filesystem has temporary files, and it fails with nothing
// ErrTransient; a retry would also lose the first attempt's counts.
func (r *retryStore) SweepTemps(ctx context.Context, olderThan time.Duration, dryRun bool) (int, int64, error) {
	return SweepTemps(ctx, r.inner, olderThan, dryRun)
}
