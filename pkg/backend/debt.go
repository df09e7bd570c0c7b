package backend

import (
	"cmp"
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
// made, not yet recorded); ranges not shared count nothing. It reads the
// extent maps with FIEMAP, without flushing: O(extents), no data read. A
// pool without reflink has no debt. The lvols named in except count as
// deleted: a range they share with one other lvol costs nothing more (they
// are read all the same, since the others' extents stay flagged shared
// until XFS frees the deleted blocks, in the background). Errors: the
// metadata's, ctx's, a FIEMAP failure (an lvol deleted meanwhile is
// skipped).
func (p *FilePool) CoWDebt(ctx context.Context, except ...string) (int64, error) {
	if !p.reflink {
		return 0, nil
	}
	lvols, err := p.List(ctx, "")
	if err != nil {
		return 0, err
	}
	var all []holder
	for _, lv := range lvols {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		rs, err := fileShared(p.dataPath(lv.ID))
		if err != nil {
			return 0, err
		}
		gone := slices.Contains(except, lv.ID)
		for _, r := range rs {
			all = append(all, holder{r, gone})
		}
	}
	return debtOf(all), nil
}

// holder is a shared device range of one lvol, gone if it counts as deleted.
type holder struct {
	physRange
	gone bool
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

// debtOf sums, over the device bytes the ranges cover, what CoWDebt
// counts for bytes held by n lvols that stay and g that go: n-1, or 1
// when a single holder (n+g is 1) implies one outside the pool. It sweeps
// the ranges' ends in order.
func debtOf(hs []holder) int64 {
	type edge struct{ at, n, g int64 }
	edges := make([]edge, 0, 2*len(hs))
	for _, h := range hs {
		n, g := int64(1), int64(0)
		if h.gone {
			n, g = 0, 1
		}
		edges = append(edges, edge{h.start, n, g}, edge{h.end, -n, -g})
	}
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Compare(a.at, b.at) })
	var debt, n, g, last int64
	for _, e := range edges {
		switch {
		case n+g == 1:
			debt += (e.at - last) * n
		case n > 1:
			debt += (e.at - last) * (n - 1)
		}
		n, g, last = n+e.n, g+e.g, e.at
	}
	return debt
}
