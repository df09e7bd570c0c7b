package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// copyChunk bounds one copy_file_range call so that a cancelled context is
// noticed within about a second of I/O.
const copyChunk = 64 << 20

// sparseCopy copies the first size bytes of src into the empty dst, visiting
// only the data regions that SEEK_DATA/SEEK_HOLE report (lseek(2)), so that
// the holes of a thin lvol stay holes in the copy. It is the fallback for a
// filesystem without reflink; cost is proportional to the written data.
func sparseCopy(ctx context.Context, dst, src *os.File, size int64) error {
	for off := int64(0); off < size; {
		data, err := src.Seek(off, unix.SEEK_DATA)
		if errors.Is(err, syscall.ENXIO) {
			break // only a hole remains
		} else if err != nil {
			return fmt.Errorf("seek data: %w", err)
		}
		hole, err := src.Seek(data, unix.SEEK_HOLE)
		if err != nil {
			return fmt.Errorf("seek hole: %w", err)
		}
		hole = min(hole, size)
		if err := copyRange(ctx, dst, src, data, hole-data); err != nil {
			return err
		}
		off = hole
	}
	if err := dst.Truncate(size); err != nil {
		return noSpace("size copy", err)
	}
	return nil
}

// copyRange copies n bytes at offset off from src to the same offset in dst,
// with copy_file_range(2) (in-kernel, and server-side on some filesystems)
// or, where the kernel refuses it, with plain reads and writes.
func copyRange(ctx context.Context, dst, src *os.File, off, n int64) error {
	for n > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		roff, woff := off, off
		c, err := unix.CopyFileRange(int(src.Fd()), &roff, int(dst.Fd()), &woff, int(min(n, copyChunk)), 0)
		switch {
		case errors.Is(err, syscall.ENOSYS), errors.Is(err, syscall.EXDEV),
			errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.EINVAL):
			return readWriteCopy(ctx, dst, src, off, n)
		case err != nil:
			return noSpace("copy_file_range", err)
		case c == 0:
			return fmt.Errorf("copy at offset %d: source shorter than expected: %w", off, io.ErrUnexpectedEOF)
		}
		off, n = off+int64(c), n-int64(c)
	}
	return nil
}

// readWriteCopy is copyRange through user space, 1 MiB at a time.
func readWriteCopy(ctx context.Context, dst, src *os.File, off, n int64) error {
	buf := make([]byte, 1<<20)
	for n > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		b := buf[:min(n, int64(len(buf)))]
		if _, err := src.ReadAt(b, off); err != nil {
			return fmt.Errorf("read at offset %d: %w", off, err)
		}
		if _, err := dst.WriteAt(b, off); err != nil {
			return noSpace("write copy", err)
		}
		off, n = off+int64(len(b)), n-int64(len(b))
	}
	return nil
}
