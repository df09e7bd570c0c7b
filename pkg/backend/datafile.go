package backend

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/internal/durable"
)

// noSpace wraps err so that an ENOSPC or EDQUOT from the filesystem reaches
// the caller as ErrNoSpace (the driver maps it to RESOURCE_EXHAUSTED).
func noSpace(op string, err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%s: %w: %w", op, ErrNoSpace, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// makeEmpty creates path as a sparse (thin) file of size bytes and fsyncs it.
// The file must not exist yet (O_EXCL), so a stale one is never reused.
func makeEmpty(path string, size int64) error {
	return sizeFile(path, os.O_CREATE|os.O_EXCL, size, "create", "size")
}

// growFile extends path to size bytes and fsyncs it.
func growFile(path string, size int64) error { return sizeFile(path, 0, size, "open", "grow") }

// sizeFile opens path for writing (with flags besides O_WRONLY), sets its
// size to size bytes, and fsyncs and closes it. Errors name the step (open
// and resize say how: "create data file", "grow data file"), wrapping
// ErrNoSpace when the filesystem is full.
func sizeFile(path string, flags int, size int64, open, resize string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|flags, 0o600)
	if err != nil {
		return noSpace(open+" data file", err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return noSpace(resize+" data file", err)
	}
	if err := f.Sync(); err != nil {
		return noSpace("sync data file", err)
	}
	return f.Close()
}

// makeClone creates path as a copy of the file srcPath grown to size bytes
// (size >= the source's size) and fsyncs it. With reflink the copy shares
// the source's extents (FICLONE, O(1) in the size); without, the data
// regions are copied and the holes left sparse.
func makeClone(ctx context.Context, path, srcPath string, size int64, reflink bool) error {
	src, err := os.Open(srcPath)
	if err != nil {
		return fmt.Errorf("open clone source: %w", err)
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return fmt.Errorf("stat clone source: %w", err)
	}
	dst, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return noSpace("create clone", err)
	}
	defer dst.Close()
	if reflink {
		err = unix.IoctlFileClone(int(dst.Fd()), int(src.Fd()))
		if err != nil {
			err = noSpace("reflink clone", err)
		}
	} else {
		err = sparseCopy(ctx, dst, src, fi.Size())
	}
	if err != nil {
		return err
	}
	if size > fi.Size() {
		if err := dst.Truncate(size); err != nil {
			return noSpace("grow clone", err)
		}
	}
	if err := dst.Sync(); err != nil {
		return noSpace("sync clone", err)
	}
	return dst.Close()
}

// removeData removes path (absent is fine) and fsyncs its directory.
func removeData(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove data file: %w", err)
	}
	return durable.SyncDir(filepath.Dir(path))
}
