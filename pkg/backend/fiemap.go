package backend

import "os"

// FIEMAP ioctl (Documentation/filesystems/fiemap.rst, linux/fiemap.h);
// golang.org/x/sys/unix has no wrapper. pkg/s3chain has its own copy:
// the stores import neither each other nor a shared helper.
const (
	fsIocFiemap   = 0xC020660B
	fiemapHdrLen  = 32 // struct fiemap
	fiemapExtLen  = 56 // struct fiemap_extent
	fiemapBatch   = 512
	extentLast    = 0x1
	extentUnknown = 0x2 | 0x4 // UNKNOWN, DELALLOC: no physical address yet
	extentShared  = 0x2000
)

// physRange is a range of device bytes [start, end).
type physRange struct{ start, end int64 }

// sharedExtents returns the device ranges of f's extents that the
// filesystem flags shared (FIEMAP_EXTENT_SHARED), without flushing delayed
// allocations: those are new blocks, never shared.
func sharedExtents(f *os.File) ([]physRange, error) {
	var out []physRange
	err := fiemapWalk(f, 0, func(_, phys, length int64, flags uint32) {
		if flags&extentShared != 0 && flags&extentUnknown == 0 {
			out = append(out, physRange{phys, phys + length})
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
