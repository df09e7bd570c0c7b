package durable

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrNoHardLinks is returned by CreateFile on a filesystem that refuses
// hard links (link(2) answers EPERM "does not support the creation of hard
// links", ENOTSUP or EOPNOTSUPP): it cannot create a file atomically there.
var ErrNoHardLinks = errors.New("this filesystem has no hard links")

// WriteFile replaces path with data, mode perm, in the five steps of the
// package doc: after it returns, path holds data across a crash; a crash
// before leaves the old content. The directory must exist (MkdirAll).
// Errors: those of the filesystem (*fs.PathError, *os.LinkError), the
// temporary file removed.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return write(path, perm, bytesOf(data), os.Rename)
}

// WriteWith is WriteFile with the content written by fill to the
// temporary file (a tarball, a stream copied from a reader); an error of
// fill is returned as it is, and path is left untouched.
func WriteWith(path string, perm fs.FileMode, fill func(io.Writer) error) error {
	return write(path, perm, fill, os.Rename)
}

// CreateFile creates path with data, mode perm, only if path does not
// exist: of racing creators exactly one wins, and a reader never sees a
// partial file. Errors: one that errors.Is fs.ErrExist when path exists
// (a file, or a directory: tell them apart with Lstat), ErrNoHardLinks,
// those of the filesystem.
func CreateFile(path string, data []byte, perm fs.FileMode) error {
	return write(path, perm, bytesOf(data), linkNew)
}

// bytesOf is the fill that writes data.
func bytesOf(data []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
}

// linkNew hard-links the finished temporary file tmp to path, then removes
// tmp (the directory's fsync that follows makes both durable).
func linkNew(tmp, path string) error {
	err := os.Link(tmp, path)
	_ = os.Remove(tmp)
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EOPNOTSUPP) {
		return fmt.Errorf("%w: %w", ErrNoHardLinks, err)
	}
	return err
}

// write runs the five steps with commit (rename or link) as step 4.
func write(path string, perm fs.FileMode, fill func(io.Writer) error, commit func(tmp, path string) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, TempPattern(filepath.Base(path)))
	if err != nil {
		return err
	}
	crashPoint("created")
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err = fill(f); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	crashPoint("written")
	if err = f.Sync(); err != nil {
		return err
	}
	crashPoint("synced")
	if err = f.Close(); err != nil {
		return err
	}
	if err = commit(f.Name(), path); err != nil {
		return err
	}
	crashPoint("committed")
	if err = SyncDir(dir); err != nil {
		return err
	}
	crashPoint("done")
	return nil
}
