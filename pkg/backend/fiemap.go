package backend

import (
	"math"
	"os"

	"github.com/chainvol/chainvol/internal/fiemap"
)

// physRange is a range of device bytes [start, end).
type physRange struct{ start, end int64 }

// sharedExtents returns the device ranges of f's extents that the
// filesystem flags shared (FIEMAP_EXTENT_SHARED), without flushing delayed
// allocations: those are new blocks, never shared. Errors: the ioctl's.
func sharedExtents(f *os.File) ([]physRange, error) {
	var out []physRange
	err := fiemap.Walk(f, math.MaxInt64, false, func(e fiemap.Extent) {
		if e.Flags&fiemap.Shared != 0 && e.Flags&(fiemap.Unknown|fiemap.Delalloc) == 0 {
			out = append(out, physRange{e.Physical, e.Physical + e.Length})
		}
	})
	return out, err
}
