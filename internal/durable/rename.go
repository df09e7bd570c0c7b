package durable

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Rename renames oldpath, a file the caller has written and fsynced, to
// newpath (replacing it) and fsyncs newpath's directory, and oldpath's
// when it differs: after it returns, the new name survives a crash.
// Errors: those of rename(2) and fsync.
func Rename(oldpath, newpath string) error {
	if err := os.Rename(oldpath, newpath); err != nil {
		return err
	}
	crashPoint("committed")
	return syncDirs(oldpath, newpath)
}

// RenameNoReplace is Rename that leaves an existing newpath alone
// (renameat2 RENAME_NOREPLACE). On a filesystem without the flag
// (EINVAL, ENOSYS) it checks that newpath is absent and renames, which a
// file created in between would lose. Errors: one that errors.Is
// fs.ErrExist when newpath exists, those of rename(2) and fsync.
func RenameNoReplace(oldpath, newpath string) error {
	err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		if _, serr := os.Lstat(newpath); serr == nil {
			err = &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrExist}
		} else {
			err = os.Rename(oldpath, newpath)
		}
	} else if err != nil {
		err = &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	if err != nil {
		return err
	}
	crashPoint("committed")
	return syncDirs(oldpath, newpath)
}

// syncDirs fsyncs the directories of newpath and, when another, oldpath.
func syncDirs(oldpath, newpath string) error {
	if err := SyncDir(filepath.Dir(newpath)); err != nil {
		return err
	}
	if od := filepath.Dir(oldpath); od != filepath.Dir(newpath) {
		if err := SyncDir(od); err != nil {
			return err
		}
	}
	crashPoint("done")
	return nil
}

// SyncDir fsyncs directory dir, making the creations, renames and removals
// of entries in it durable. Errors: those of open(2) and fsync, naming dir.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// MkdirAll is os.MkdirAll(dir, perm) that also fsyncs the parent of each
// directory it creates, so that the new directories, and the files later
// made durable in them, survive a crash. An existing dir costs one stat.
// Errors: those of os.MkdirAll and SyncDir.
func MkdirAll(dir string, perm fs.FileMode) error {
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	top := dir // the highest directory missing
	for {
		if _, err := os.Lstat(top); err == nil {
			break
		}
		parent := filepath.Dir(top)
		if parent == top {
			break
		}
		top = parent
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	for d := dir; d != top; d = filepath.Dir(d) {
		if err := SyncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}
