package s3chain

import (
	"os"
	"sort"

	"github.com/chainvol/chainvol/internal/fiemap"
)

// extentCompareMsk are the flags two extents must share to hold the same
// bytes: the written state.
const extentCompareMsk = fiemap.Unwritten

// extent maps file bytes [Logical, Logical+Length) to device bytes at
// Physical.
type extent = fiemap.Extent

// fiemapOf returns the extents of f overlapping [0, size), sorted, after
// flushing delayed allocations (FIEMAP_FLAG_SYNC) so the map is final.
func fiemapOf(f *os.File, size int64) ([]extent, error) {
	var out []extent
	err := fiemap.Walk(f, size, true, func(e extent) { out = append(out, e) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// sameExtents reports whether bytes [off, end) of two files map to the same
// device bytes with the same written state, which on a reflink file system
// means the same content without reading it: a write to a shared extent is
// copied elsewhere first. Any uncertain extent (delalloc, inline, encoded)
// counts as different.
func sameExtents(a, b []extent, off, end int64) bool {
	pa, okA := pieces(a, off, end)
	pb, okB := pieces(b, off, end)
	if !okA || !okB || len(pa) != len(pb) {
		return false
	}
	for i := range pa {
		if pa[i] != pb[i] {
			return false
		}
	}
	return true
}

// pieces clips the extents overlapping [off, end) to that range; ok is
// false when one of them is uncertain.
func pieces(ext []extent, off, end int64) ([]extent, bool) {
	i := sort.Search(len(ext), func(i int) bool { return ext[i].Logical+ext[i].Length > off })
	var out []extent
	for ; i < len(ext) && ext[i].Logical < end; i++ {
		e := ext[i]
		if e.Flags&fiemap.Uncertain != 0 {
			return nil, false
		}
		lo, hi := max(e.Logical, off), min(e.Logical+e.Length, end)
		out = append(out, extent{Logical: lo, Physical: e.Physical + (lo - e.Logical), Length: hi - lo, Flags: e.Flags & extentCompareMsk})
	}
	return out, true
}
