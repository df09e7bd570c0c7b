package s3chain

import (
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"unsafe"

	"golang.org/x/sys/unix"
)

// FIEMAP ioctl (Documentation/filesystems/fiemap.rst, linux/fiemap.h);
// golang.org/x/sys/unix has no wrapper.
const (
	fsIocFiemap      = 0xC020660B
	fiemapFlagSync   = 0x1
	fiemapHdrLen     = 32 // struct fiemap
	fiemapExtLen     = 56 // struct fiemap_extent
	fiemapBatch      = 512
	extentLast       = 0x1
	extentUnwritten  = 0x800
	extentUncertain  = 0x2 | 0x4 | 0x8 | 0x80 | 0x100 | 0x200 | 0x400 // UNKNOWN DELALLOC ENCODED DATA_ENCRYPTED NOT_ALIGNED DATA_INLINE DATA_TAIL
	extentCompareMsk = extentUnwritten
)

// extent maps file bytes [Logical, Logical+Length) to device bytes at
// Physical.
type extent struct {
	Logical, Physical, Length int64
	Flags                     uint32
}

// fiemap returns the extents of f overlapping [0, size), sorted, after
// flushing delayed allocations (FIEMAP_FLAG_SYNC) so the map is final.
func fiemap(f *os.File, size int64) ([]extent, error) {
	buf := make([]byte, fiemapHdrLen+fiemapBatch*fiemapExtLen)
	le := binary.LittleEndian
	var out []extent
	for pos := int64(0); pos < size; {
		clear(buf[:fiemapHdrLen])
		le.PutUint64(buf[0:], uint64(pos))
		le.PutUint64(buf[8:], uint64(size-pos))
		le.PutUint32(buf[16:], fiemapFlagSync)
		le.PutUint32(buf[24:], fiemapBatch)
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fsIocFiemap, uintptr(unsafe.Pointer(&buf[0])))
		if errno != 0 {
			return nil, fmt.Errorf("FIEMAP %s: %w", f.Name(), errno)
		}
		n := int(le.Uint32(buf[20:]))
		if n == 0 {
			break
		}
		last := false
		for i := range n {
			e := buf[fiemapHdrLen+i*fiemapExtLen:]
			x := extent{Logical: int64(le.Uint64(e[0:])), Physical: int64(le.Uint64(e[8:])),
				Length: int64(le.Uint64(e[16:])), Flags: le.Uint32(e[40:])}
			out = append(out, x)
			pos = x.Logical + x.Length
			last = x.Flags&extentLast != 0
		}
		if last {
			break
		}
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
		if e.Flags&extentUncertain != 0 {
			return nil, false
		}
		lo, hi := max(e.Logical, off), min(e.Logical+e.Length, end)
		out = append(out, extent{Logical: lo, Physical: e.Physical + (lo - e.Logical), Length: hi - lo, Flags: e.Flags & extentCompareMsk})
	}
	return out, true
}
