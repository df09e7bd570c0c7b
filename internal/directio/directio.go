// Package directio writes whole blocks of a file with O_DIRECT beside its
// buffered descriptor: what a restore and an instant restore's hydration do
// with the lvol's data file. Each block is written once and read back
// rarely, so the page cache only costs them (s3chain/restore_direct.go
// has the measurement). O_DIRECT needs the buffer, offset and length
// aligned to the logical block size; Align (4096) covers every disk and
// filesystem in use. Unaligned writes, and filesystems that refuse
// O_DIRECT, go through the buffered descriptor.
package directio

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Align is the alignment of O_DIRECT buffers, offsets and lengths, in bytes.
const Align = 4096

// Open opens a second descriptor of f with O_DIRECT for writes, through
// /proc/self/fd so that it is the very file already opened and checked (no
// race with its path). It returns nil when the filesystem refuses
// O_DIRECT; writes then go through f.
func Open(f *os.File) *os.File {
	d, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), os.O_WRONLY|unix.O_DIRECT, 0)
	if err != nil {
		return nil
	}
	return d
}

// AlignedBuf returns a buffer of n bytes whose first byte is aligned to Align.
func AlignedBuf(n int64) []byte {
	b := make([]byte, n+Align)
	off := Align - int(uintptr(unsafe.Pointer(&b[0]))%Align)
	if off == Align {
		off = 0
	}
	return b[off : off+int(n) : off+int(n)]
}

// IsAligned reports whether p's first byte is aligned to Align.
func IsAligned(p []byte) bool {
	return len(p) == 0 || uintptr(unsafe.Pointer(&p[0]))%Align == 0
}

// WriteAt writes data at off: through direct (O_DIRECT, nil for none) when
// off and len(data) are aligned, copying data into buf (an aligned buffer
// of at least len(data) bytes; nil: data must be aligned itself) unless it
// is aligned already; else, and when the filesystem turns O_DIRECT down
// (EINVAL), through buffered. Errors: the write's.
func WriteAt(direct, buffered *os.File, data []byte, off int64, buf []byte) error {
	if direct != nil && off%Align == 0 && len(data)%Align == 0 && (IsAligned(data) || len(data) <= cap(buf)) {
		p := data
		if !IsAligned(p) {
			p = buf[:len(data)]
			copy(p, data)
		}
		_, err := direct.WriteAt(p, off)
		if !errors.Is(err, unix.EINVAL) {
			return err
		}
	}
	_, err := buffered.WriteAt(data, off)
	return err
}
