package backend

import (
	"encoding/binary"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// More FIEMAP flags (linux/fiemap.h) beside fiemap.go's.
const (
	fiemapFlagSync  = 0x1   // FIEMAP_FLAG_SYNC: flush delayed allocations first
	extentUnwritten = 0x800 // FIEMAP_EXTENT_UNWRITTEN: allocated, reads as zeros
	// UNKNOWN DELALLOC ENCODED DATA_ENCRYPTED NOT_ALIGNED DATA_INLINE
	// DATA_TAIL: the physical address does not identify the content.
	extentUncertain = 0x2 | 0x4 | 0x8 | 0x80 | 0x100 | 0x200 | 0x400
)

// Extent is one FIEMAP extent of a file: file bytes [Logical,
// Logical+Length) on device bytes starting at Physical.
type Extent struct {
	Logical, Physical, Length int64
	// Unwritten: allocated but reads as zeros (FIEMAP_EXTENT_UNWRITTEN).
	Unwritten bool
	// Uncertain: Physical does not identify the bytes (delalloc, inline,
	// encoded...): two such extents are never known to hold the same data.
	Uncertain bool
	// Shared: the filesystem reports the device bytes held by another file
	// too (FIEMAP_EXTENT_SHARED, a reflink).
	Shared bool
}

// Extents returns the extents of the data file at path, sorted by
// Logical, after flushing delayed allocations (FIEMAP_FLAG_SYNC) so that
// the map is final; holes are the bytes no extent covers. The file is
// read through an open descriptor, so an lvol deleted meanwhile answers
// with the extents it had. Errors: os.ErrNotExist (wrapped) when the file
// is gone, the ioctl's errno (EOPNOTSUPP on a filesystem without FIEMAP).
// Source: Documentation/filesystems/fiemap.rst.
func Extents(path string) ([]Extent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Extent
	err = fiemapWalk(f, fiemapFlagSync, func(logical, phys, length int64, flags uint32) {
		out = append(out, Extent{Logical: logical, Physical: phys, Length: length,
			Unwritten: flags&extentUnwritten != 0, Uncertain: flags&extentUncertain != 0,
			Shared: flags&extentShared != 0})
	})
	return out, err
}

// fiemapWalk calls fn with every extent of f in order (logical, physical
// and length in bytes, the FIEMAP_EXTENT_* flags), asking the kernel for
// fiemapBatch extents a call with the FIEMAP_FLAG_* flags given.
func fiemapWalk(f *os.File, reqFlags uint32, fn func(logical, phys, length int64, flags uint32)) error {
	buf := make([]byte, fiemapHdrLen+fiemapBatch*fiemapExtLen)
	le := binary.LittleEndian
	for pos := int64(0); ; {
		clear(buf[:fiemapHdrLen])
		le.PutUint64(buf[0:], uint64(pos))
		le.PutUint64(buf[8:], ^uint64(0)-uint64(pos))
		le.PutUint32(buf[16:], reqFlags)
		le.PutUint32(buf[24:], fiemapBatch)
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fsIocFiemap, uintptr(unsafe.Pointer(&buf[0])))
		if errno != 0 {
			return fmt.Errorf("FIEMAP %s: %w", f.Name(), errno)
		}
		n := int(le.Uint32(buf[20:]))
		if n == 0 {
			return nil
		}
		for i := range n {
			e := buf[fiemapHdrLen+i*fiemapExtLen:]
			logical, phys, length := int64(le.Uint64(e[0:])), int64(le.Uint64(e[8:])), int64(le.Uint64(e[16:]))
			flags := le.Uint32(e[40:])
			fn(logical, phys, length, flags)
			pos = logical + length
			if flags&extentLast != 0 {
				return nil
			}
		}
	}
}
