// Package fiemap reads a file's extent map with the FIEMAP ioctl
// (Documentation/filesystems/fiemap.rst, linux/fiemap.h); golang.org/x/sys/unix
// has no wrapper. It is a leaf shared by the stores (pkg/backend measures
// the pool's copy-on-write debt with it, pkg/s3chain compares a volume
// with its backup base without reading data), as internal/durable is.
package fiemap

import (
	"encoding/binary"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Extent flags (FIEMAP_EXTENT_*, linux/fiemap.h).
const (
	Last     = 0x1
	Unknown  = 0x2 // no physical address yet
	Delalloc = 0x4 // delayed allocation: also Unknown
	// Uncertain are the flags under which the physical range does not
	// name the data for sure: UNKNOWN DELALLOC ENCODED DATA_ENCRYPTED
	// NOT_ALIGNED DATA_INLINE DATA_TAIL.
	Uncertain = Unknown | Delalloc | 0x8 | 0x80 | 0x100 | 0x200 | 0x400
	Unwritten = 0x800
	Shared    = 0x2000
)

// struct fiemap's layout and the batch of extents asked per call.
const (
	iocFiemap = 0xC020660B
	flagSync  = 0x1 // FIEMAP_FLAG_SYNC
	hdrLen    = 32  // struct fiemap
	extLen    = 56  // struct fiemap_extent
	batch     = 512
)

// Extent maps file bytes [Logical, Logical+Length) to device bytes at
// Physical, with its FIEMAP_EXTENT_* Flags.
type Extent struct {
	Logical, Physical, Length int64
	Flags                     uint32
}

// Walk calls fn with each extent of f overlapping file bytes [0, size), in
// file order (size math.MaxInt64: to the end of the file). With sync the
// kernel flushes delayed allocations first (FIEMAP_FLAG_SYNC) so the map
// is final; without, new blocks may come as Delalloc. Errors: the ioctl's
// errno (unix.EOPNOTSUPP on a file system without FIEMAP), naming f.
func Walk(f *os.File, size int64, sync bool, fn func(Extent)) error {
	buf := make([]byte, hdrLen+batch*extLen)
	le := binary.LittleEndian
	var flags uint32
	if sync {
		flags = flagSync
	}
	for pos := int64(0); pos < size; {
		clear(buf[:hdrLen])
		le.PutUint64(buf[0:], uint64(pos))
		le.PutUint64(buf[8:], uint64(size-pos))
		le.PutUint32(buf[16:], flags)
		le.PutUint32(buf[24:], batch)
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), iocFiemap, uintptr(unsafe.Pointer(&buf[0])))
		if errno != 0 {
			return fmt.Errorf("FIEMAP %s: %w", f.Name(), errno)
		}
		n := int(le.Uint32(buf[20:]))
		if n == 0 {
			return nil
		}
		for i := range n {
			e := buf[hdrLen+i*extLen:]
			x := Extent{Logical: int64(le.Uint64(e[0:])), Physical: int64(le.Uint64(e[8:])),
				Length: int64(le.Uint64(e[16:])), Flags: le.Uint32(e[40:])}
			fn(x)
			if x.Flags&Last != 0 {
				return nil
			}
			pos = x.Logical + x.Length
		}
	}
	return nil
}
