package backend

import (
	"encoding/binary"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

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
	buf := make([]byte, fiemapHdrLen+fiemapBatch*fiemapExtLen)
	le := binary.LittleEndian
	var out []physRange
	for pos := int64(0); ; {
		clear(buf[:fiemapHdrLen])
		le.PutUint64(buf[0:], uint64(pos))
		le.PutUint64(buf[8:], ^uint64(0)-uint64(pos))
		le.PutUint32(buf[24:], fiemapBatch)
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fsIocFiemap, uintptr(unsafe.Pointer(&buf[0])))
		if errno != 0 {
			return nil, fmt.Errorf("FIEMAP %s: %w", f.Name(), errno)
		}
		n := int(le.Uint32(buf[20:]))
		if n == 0 {
			return out, nil
		}
		for i := range n {
			e := buf[fiemapHdrLen+i*fiemapExtLen:]
			logical, phys, length := int64(le.Uint64(e[0:])), int64(le.Uint64(e[8:])), int64(le.Uint64(e[16:]))
			flags := le.Uint32(e[40:])
			if flags&extentShared != 0 && flags&extentUnknown == 0 {
				out = append(out, physRange{phys, phys + length})
			}
			pos = logical + length
			if flags&extentLast != 0 {
				return out, nil
			}
		}
	}
}
