package s3chain

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// statWorkers is how many block objects checkObjects asks about at once
// per restore worker: a HEAD carries no data, so latency, not bandwidth,
// bounds it.
const statWorkers = 4

// verifyDone reads back every block the checkpoint marks done (and, with
// RestoreOptions.VerifyBase, every block the base provides) and keeps it
// only when its bytes hash to the block's digest, so whatever a resumed
// restore skips is provably the backup's bytes, even when the checkpoint
// was written for another destination. Other blocks are fetched again. It
// costs one local read of the skipped data (no download). It returns the
// number of blocks that did not match.
func (j *restoreJob) verifyDone(ctx context.Context) (int, error) {
	var todo []int64
	for i, d := range j.blocks {
		if !d.isZero() && (j.cp.isDone(int64(i)) || (j.o.VerifyBase && j.fromBase(i))) {
			todo = append(todo, int64(i))
		}
	}
	var mu sync.Mutex
	var bad []int64
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(j.workers())
	bufs := sync.Pool{New: func() any { b := make([]byte, j.tip.BlockSize); return &b }}
	for _, i := range todo {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			buf := bufs.Get().(*[]byte)
			defer bufs.Put(buf)
			data := (*buf)[:j.blockLen(i)]
			if _, err := j.dest.ReadAt(data, i*j.tip.BlockSize); err != nil {
				return fmt.Errorf("read back block %d of %s: %w", i, j.o.Destination, err)
			}
			if blockDigest(j.cfg.keys.names, data) != j.blocks[i] {
				mu.Lock()
				bad = append(bad, i)
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	j.baseBad = map[int]bool{}
	for _, i := range bad {
		j.cp.undo(i)
		j.baseBad[int(i)] = true
	}
	return len(bad), nil
}

// checkObjects makes sure every object of todo exists before anything is
// written, and fails with ErrCorruptBlock naming the lowest block index
// whose object is missing. It lists the chain's block prefix when that
// takes fewer round trips than a HEAD per object (listBlocks), and asks
// with a Stat (HEAD) about what the listing did not cover. Other store
// errors (store.ErrTransient ...) are returned as they are.
func (j *restoreJob) checkObjects(ctx context.Context, todo []*fetch) error {
	if len(todo) == 0 {
		return nil
	}
	seen, complete := j.listBlocks(ctx, listBudget(len(todo), j.workers()))
	var rest []*fetch
	for _, f := range todo {
		if !seen[f.d] {
			rest = append(rest, f)
		}
	}
	missing := rest
	// On a lock= target a block a delete marker hides is not listed, but
	// Stat reads through to its retained version (FORMAT.md §7.4).
	if !complete || (len(rest) > 0 && j.r.readsThrough()) {
		var err error
		if missing, err = j.statObjects(ctx, rest); err != nil {
			return err
		}
	}
	if len(missing) == 0 {
		return nil
	}
	f := slices.MinFunc(missing, func(a, b *fetch) int { return cmp.Compare(a.indices[0], b.indices[0]) })
	return fmt.Errorf("%w: block %d (object %s) is missing (%d of %d objects missing): %w",
		ErrCorruptBlock, f.indices[0], blockKey(j.cfg.Chain, f.d.String()), len(missing), len(todo), store.ErrObjectNotFound)
}

// listPage is the number of keys one S3 ListObjectsV2 page returns
// (MaxKeys' default, S3 API Reference).
const listPage = 1000

// listBudget is how many keys of the chain's block prefix may be listed
// for the check of n objects: as many pages as the HEADs of n objects
// would take round trips (statWorkers x workers at a time), at least one.
func listBudget(n, workers int) int {
	return max(1, n/(statWorkers*workers)) * listPage
}

// errListBudget stops a listing that exceeded its budget.
var errListBudget = errors.New("listing budget spent")

// listBlocks lists up to budget keys of the chain's block prefix and
// returns the digests seen (recording the key of each) and whether the
// listing was complete (then an object not seen does not exist). A failed
// listing is reported as incomplete: the HEADs that follow give the real
// answer.
func (j *restoreJob) listBlocks(ctx context.Context, budget int) (map[digest]bool, bool) {
	keys, complete := j.r.listBlockKeys(ctx, j.cfg.Chain, budget)
	seen := map[digest]bool{}
	for d, ks := range keys {
		seen[d] = true
		j.locate(d, ks[0])
	}
	return seen, complete
}

// statObjects asks the store (a Stat, that is a HEAD, each; a listing of
// its variants when the plain key is missing) whether every object of todo
// exists and returns those that do not.
func (j *restoreJob) statObjects(ctx context.Context, todo []*fetch) ([]*fetch, error) {
	var mu sync.Mutex
	var missing []*fetch
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(statWorkers * j.workers())
	for _, f := range todo {
		g.Go(func() error {
			key, err := j.r.locateBlock(gctx, j.cfg.Chain, f.d, nil)
			if errors.Is(err, store.ErrObjectNotFound) {
				mu.Lock()
				missing = append(missing, f)
				mu.Unlock()
				return nil
			}
			if err != nil {
				return fmt.Errorf("check block %d: %w", f.indices[0], err)
			}
			j.locate(f.d, key)
			return nil
		})
	}
	return missing, g.Wait()
}

// locate records the object key found for digest d.
func (j *restoreJob) locate(d digest, key string) {
	if key == blockKey(j.cfg.Chain, d.String()) {
		return // the plain key is the default
	}
	j.keysMu.Lock()
	defer j.keysMu.Unlock()
	if j.keys == nil {
		j.keys = map[digest]string{}
	}
	j.keys[d] = key
}

// keyOf is the object key to fetch digest d from: the one found by
// checkObjects, else the plain key.
func (j *restoreJob) keyOf(d digest) string {
	j.keysMu.Lock()
	defer j.keysMu.Unlock()
	if k, ok := j.keys[d]; ok {
		return k
	}
	return blockKey(j.cfg.Chain, d.String())
}

// workers is the restore's parallelism (RestoreOptions.Workers).
func (j *restoreJob) workers() int {
	if j.o.Workers > 0 {
		return j.o.Workers
	}
	return DefaultWorkers
}
