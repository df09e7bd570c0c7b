package durable

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/internal/testutil"
)

// The crash test runs each operation on a real XFS filesystem on a loop
// device and, at each step boundary (crashHook), shuts the filesystem down
// without writing its log (XFS_IOC_GOINGDOWN, NOLOGFLUSH: what xfstests
// uses to emulate a power loss), so that whatever the operation has not
// yet made durable is lost as in a crash. It then unmounts, mounts again
// (log recovery) and checks the file: the old content or the new, never
// missing or torn, and the new one once the operation has returned.

const crashFSSizeBytes = 320 << 20 // mkfs.xfs's minimum is 300 MiB

// crashFS is a mounted XFS filesystem that the test can crash.
type crashFS struct {
	t   *testing.T
	mnt string
}

func newCrashFS(t *testing.T) *crashFS {
	return &crashFS{t: t, mnt: testutil.LoopFS(t, "xfs", crashFSSizeBytes)}
}

// shutdown stops the filesystem dead: later I/O fails with EIO and the
// in-memory log is dropped (testutil.PowerLoss).
func (c *crashFS) shutdown() { testutil.PowerLoss(c.t, c.mnt) }

// remount unmounts the shut-down filesystem and mounts it again.
func (c *crashFS) remount() { testutil.Remount(c.t, c.mnt) }

// op is an operation under test: setup makes the state before it (durably)
// and returns what path holds then (nil: absent); run does it.
type op struct {
	name  string
	old   []byte // nil: path absent before
	run   func(dir, path string, data []byte) error
	steps []string // the crash points it must pass
}

var writeSteps = []string{"created", "written", "synced", "committed", "done"}
var renameSteps = []string{"committed", "done"}

// prepared writes data to a sibling file of path and fsyncs it, as the
// callers of Rename do, and returns its path.
func prepared(dir string, data []byte) (string, error) {
	src := filepath.Join(dir, "prepared")
	f, err := os.Create(src)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return "", err
	}
	return src, f.Sync()
}

func ops() []op {
	old := bytes.Repeat([]byte("old "), 2000)
	return []op{
		{"WriteFile", old, func(_, p string, d []byte) error { return WriteFile(p, d, 0o600) }, writeSteps},
		{"CreateFile", nil, func(_, p string, d []byte) error { return CreateFile(p, d, 0o644) }, writeSteps},
		{"Rename", old, func(dir, p string, d []byte) error {
			src, err := prepared(dir, d)
			if err != nil {
				return err
			}
			return Rename(src, p)
		}, renameSteps},
		{"RenameNoReplace", nil, func(dir, p string, d []byte) error {
			src, err := prepared(dir, d)
			if err != nil {
				return err
			}
			return RenameNoReplace(src, p)
		}, renameSteps},
	}
}

// TestCrash crashes each operation at each of its steps and checks what
// the remounted filesystem holds.
func TestCrash(t *testing.T) {
	c := newCrashFS(t)
	newData := bytes.Repeat([]byte("new content "), 3000) // > one page: a torn write would show
	for _, o := range ops() {
		for _, step := range o.steps {
			t.Run(o.name+"/"+step, func(t *testing.T) {
				c.t = t
				got, err := c.crashAt(o, step, newData)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, o.old) && !bytes.Equal(got, newData) {
					t.Fatalf("after a crash at %s: path holds %d bytes %.20q, neither old (%d) nor new (%d)",
						step, len(got), got, len(o.old), len(newData))
				}
				if step == "done" && !bytes.Equal(got, newData) {
					t.Fatalf("after a crash once %s returned, path holds the old content: the write was lost", o.name)
				}
				t.Logf("crash at %s: path holds the %s content", step, map[bool]string{true: "new", false: "old"}[bytes.Equal(got, newData)])
			})
		}
	}
}

// crashAt runs o in a fresh directory with the filesystem shut down after
// step, remounts, and returns what path holds (nil: absent). The
// directory must then hold nothing else but temporary files (IsTemp) and
// the prepared source of a rename.
func (c *crashFS) crashAt(o op, step string, data []byte) ([]byte, error) {
	dir := filepath.Join(c.mnt, fmt.Sprintf("%s-%s", o.name, step))
	path := filepath.Join(dir, "state.json")
	if err := MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if o.old != nil {
		if err := WriteFile(path, o.old, 0o600); err != nil {
			return nil, err
		}
	}
	if err := syncFS(dir); err != nil {
		return nil, err
	}
	crashed := false
	crashHook = func(s string) {
		if s == step && !crashed {
			crashed = true
			c.shutdown()
		}
	}
	err := o.run(dir, path, data)
	crashHook = nil
	if !crashed {
		return nil, fmt.Errorf("%s never reached step %s (err %v)", o.name, step, err)
	}
	if step == "done" && err != nil {
		return nil, fmt.Errorf("%s failed before its end: %v", o.name, err)
	}
	c.remount()
	return readChecked(dir, path)
}

// readChecked returns path's content and checks the rest of dir.
func readChecked(dir, path string) ([]byte, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if n := e.Name(); n != filepath.Base(path) && n != "prepared" && !IsTemp(n) {
			return nil, fmt.Errorf("unexpected file %s left in %s", n, dir)
		}
	}
	got, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return got, err
}

func syncFS(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Syncfs(fd)
}

// The routines durable replaced, kept here as the negative controls of
// the crash test: each misses one fsync.
var (
	// noDirSync is s3chain's writeCheckpointFile and Image.WriteFile
	// before: the directory is not fsynced after the rename.
	noDirSync = op{"noDirSync", []byte("old"), func(_, p string, d []byte) error {
		tmp := legacyTemp(p)
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		_, err = f.Write(d)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, p)
		}
		crashPoint("done")
		return err
	}, []string{"done"}}
	// noFileSync renames a temporary file it never fsynced.
	noFileSync = op{"noFileSync", []byte("old"), func(dir, p string, d []byte) error {
		if err := os.WriteFile(legacyTemp(p), d, 0o600); err != nil {
			return err
		}
		if err := os.Rename(legacyTemp(p), p); err != nil {
			return err
		}
		err := SyncDir(dir)
		crashPoint("done")
		return err
	}, []string{"done"}}
)

// legacyTemp names the temporary file of a control so that readChecked
// takes it for one of ours.
func legacyTemp(p string) string {
	return filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+tempMark+"1")
}

// TestCrashDetectsMissingSync shows that the crash test catches a write
// that misses the directory's fsync (its rename is lost after it
// returned) or the file's (the new name holds a torn file). A background
// log write between the return and the shutdown could save such a write
// by chance, so each gets three tries.
func TestCrashDetectsMissingSync(t *testing.T) {
	c := newCrashFS(t)
	newData := bytes.Repeat([]byte("new content "), 3000)
	for _, o := range []op{noDirSync, noFileSync} {
		t.Run(o.name, func(t *testing.T) {
			c.t = t
			for try := range 3 {
				o.name = fmt.Sprintf("%s-%d", o.name, try)
				got, err := c.crashAt(o, "done", newData)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, newData) {
					t.Logf("detected: after a crash once the write returned, path holds %d bytes %.12q (new: %d)",
						len(got), got, len(newData))
					return
				}
			}
			t.Fatal("three crashes after the write returned all kept its content: the test cannot see the missing fsync")
		})
	}
}
