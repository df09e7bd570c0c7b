package s3chain

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// span is a byte range [Off, End) of a file.
type span struct{ Off, End int64 }

// dataSpans returns the ranges of f below size that may hold data, found
// with SEEK_DATA/SEEK_HOLE (lseek(2)); everything else reads as zeros. When
// the file system or device cannot tell, the whole range is data.
func dataSpans(f *os.File, size int64) []span {
	fd := int(f.Fd())
	var out []span
	for off := int64(0); off < size; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // no data at or after off
		}
		if err != nil {
			return []span{{off, size}}
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			hole = size
		}
		if data >= size {
			break
		}
		out = append(out, span{data, min(hole, size)})
		off = hole
	}
	return out
}

// isHole reports whether [off, end) of the regular file f is one hole, so
// it already reads as zeros without being written.
func isHole(f *os.File, off, end int64) bool {
	data, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
	return errors.Is(err, unix.ENXIO) || err == nil && data >= end
}

// zeroRange makes [off, end) of the destination read as zeros: a hole punched
// with fallocate(PUNCH_HOLE|KEEP_SIZE) in a regular file, BLKZEROOUT on a
// block device, and written zeros when neither is supported. A range that
// is already a hole is left alone, so a fresh sparse file stays sparse.
// It returns the bytes of zeros actually written.
func zeroRange(f *os.File, isDev bool, off, end int64) (int64, error) {
	fd := int(f.Fd())
	if !isDev {
		if isHole(f, off, end) {
			return 0, nil
		}
		err := unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, end-off)
		if err == nil {
			return 0, nil
		}
		if !errors.Is(err, unix.EOPNOTSUPP) {
			return 0, fmt.Errorf("punch hole [%d, %d) in %s: %w", off, end, f.Name(), err)
		}
	} else {
		rng := [2]uint64{uint64(off), uint64(end - off)}
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.BLKZEROOUT, uintptr(unsafe.Pointer(&rng)))
		if errno == 0 {
			return 0, nil
		}
	}
	return writeZeros(f, off, end)
}

var zeroChunk = make([]byte, 1<<20)

func writeZeros(f *os.File, off, end int64) (int64, error) {
	for p := off; p < end; {
		n, err := f.WriteAt(zeroChunk[:min(int64(len(zeroChunk)), end-p)], p)
		if err != nil {
			return p - off, fmt.Errorf("write zeros at %d in %s: %w", p, f.Name(), err)
		}
		p += int64(n)
	}
	return end - off, nil
}

// fileSize returns the size in bytes of a regular file or block device and
// whether it is a block device.
func fileSize(f *os.File) (int64, bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, false, err
	}
	if fi.Mode()&os.ModeDevice == 0 {
		return fi.Size(), false, nil
	}
	size, err := f.Seek(0, io.SeekEnd) // a block device's size (BLKGETSIZE64)
	return size, true, err
}

// isZero reports whether b is all zero bytes, comparing 64 KiB at a time
// with memcmp-speed bytes.Equal.
func isZero(b []byte) bool {
	for len(b) > 0 {
		n := min(len(b), 64<<10)
		if !bytes.Equal(b[:n], zeroChunk[:n]) {
			return false
		}
		b = b[n:]
	}
	return true
}
