package backend

import (
	"context"
	"errors"
	"os"
	"slices"
)

// A reflink copy (snapshot, backup base, clone) costs no blocks when made:
// it shares its source's extents. Each write into a shared extent, by any
// of the files holding it, copies the written blocks first, so a device
// range held by r lvols can still cost r-1 copies of itself until all but
// one have rewritten it. That is the pool's copy-on-write debt.

// CoWDebt returns the pool's copy-on-write debt in bytes: what rewriting
// every shared extent of every lvol could still allocate. A device range
// flagged shared and held by r of the pool's lvols counts r-1 times, and
// once when r is 1 (its other holder is outside the list: a file being
// made in tmp/); ranges not shared count nothing. It reads the extent maps
// with FIEMAP, without flushing: O(extents), no data read. A pool without
// reflink has no debt. The lvols named in except are left out, as if
// deleted (their blocks freed, which XFS does in the background). Errors: the metadata's, ctx's, a FIEMAP failure
// (an lvol deleted meanwhile is skipped).
func (p *FilePool) CoWDebt(ctx context.Context, except ...string) (int64, error) {
	if !p.reflink {
		return 0, nil
	}
	lvols, err := p.List(ctx, "")
	if err != nil {
		return 0, err
	}
	var all []physRange
	for _, lv := range lvols {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if slices.Contains(except, lv.ID) {
			continue
		}
		r, err := fileShared(p.dataPath(lv.ID))
		if err != nil {
			return 0, err
		}
		all = append(all, r...)
	}
	return debtOf(all), nil
}

// fileShared returns the shared device ranges of the data file at path;
// none when it no longer exists.
func fileShared(path string) ([]physRange, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	return sharedExtents(f)
}

// debtOf sums, over the device bytes the ranges cover, max(r-1, 1) for
// bytes covered r times (see CoWDebt), sweeping the ranges' ends in order.
func debtOf(rs []physRange) int64 {
	type edge struct{ at, d int64 }
	edges := make([]edge, 0, 2*len(rs))
	for _, r := range rs {
		edges = append(edges, edge{r.start, 1}, edge{r.end, -1})
	}
	slices.SortFunc(edges, func(a, b edge) int { return int(max(-1, min(1, a.at-b.at))) })
	var debt, depth, last int64
	for _, e := range edges {
		if depth > 0 {
			debt += (e.at - last) * max(depth-1, 1)
		}
		depth, last = depth+e.d, e.at
	}
	return debt
}
