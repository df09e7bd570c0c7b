package driver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
	utilexec "k8s.io/utils/exec"
)

// loopDevices attaches lvol data files to loop devices with util-linux
// losetup, and finds them by asking the kernel (list). The kernel is the
// only record of which device backs which file, so lookups survive a
// driver restart without state of our own.
type loopDevices struct {
	exec utilexec.Interface
}

// find returns the loop device backing file, or "" when none does.
func (l *loopDevices) find(ctx context.Context, file string) (string, error) {
	devs, err := l.list(ctx, file)
	if err != nil || len(devs) == 0 {
		return "", err
	}
	return devs[0], nil
}

// list returns every loop device backing file, in device order, matched
// as losetup --associated matches them (the device and inode numbers
// LOOP_GET_STATUS64 reports against file's) but without its exec: a fork
// and exec of losetup took 3-6 ms, more than the reflink of the 1 GiB
// snapshot it came before (docs/BENCHMARKS.md, session 10). Only bound
// devices (/sys/block/loopN/loop) are asked; a device the kernel cannot
// answer for (its own file unreachable) is matched by its file's name.
// Errors: file cannot be stat'ed, ctx's.
func (l *loopDevices) list(ctx context.Context, file string) ([]string, error) {
	var st unix.Stat_t
	if err := unix.Stat(file, &st); err != nil {
		return nil, fmt.Errorf("find the loop devices of %s: %w", file, err)
	}
	var devs []string
	for _, name := range sysLoops() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, err := os.Stat(filepath.Join("/sys/block", name, "loop")); err != nil {
			continue // not bound to a file
		}
		dev := "/dev/" + name
		info, err := loopStatus(dev)
		switch {
		case errors.Is(err, unix.ENXIO) || errors.Is(err, fs.ErrNotExist):
			continue // detached since the glob
		case err != nil:
			// The kernel stats the device's own file to answer (EIO on a
			// shut-down filesystem, ENOTCONN over a dead FUSE server):
			// one such neighbour must not hide every other file's
			// devices. losetup --associated skips it too; it is matched
			// here by the name it was attached with instead, so that
			// the device of a dead instant image is still found to be
			// detached.
			klog.V(2).InfoS("loop device status unreadable: matched by its backing file's name", "device", dev, "err", err)
			if backedByName(name, file) {
				devs = append(devs, dev)
			}
		case info.Device == st.Dev && info.Inode == st.Ino:
			devs = append(devs, dev)
		}
	}
	return devs, nil
}

// backedByName reports whether loop device name (loopN) was attached to
// the file at path, by the name sysfs keeps (/sys/block/loopN/loop/
// backing_file, which the kernel suffixes " (deleted)" once unlinked).
func backedByName(name, path string) bool {
	b, err := os.ReadFile(filepath.Join("/sys/block", name, "loop", "backing_file"))
	if err != nil {
		return false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	// sysfs names the file by its real path; the directory is resolved
	// where it can be (not through a dead FUSE mount: then as given).
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(dir, filepath.Base(abs))
	}
	return strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)") == abs
}

// sysLoops returns the names of the loop devices (loopN) in /sys/block,
// in device order: one directory read, where a glob of
// /sys/block/loop*/loop also opened every device's directory.
func sysLoops() []string {
	ents, _ := os.ReadDir("/sys/block")
	var names []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "loop") {
			names = append(names, e.Name())
		}
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(loopNumber(a), loopNumber(b)) })
	return names
}

// loopStatus is LOOP_GET_STATUS64 of loop device dev (its backing file's
// device and inode numbers). Errors: open's, ENXIO when dev is bound to
// no file, EIO when the loop driver cannot stat its file.
func loopStatus(dev string) (*unix.LoopInfo64, error) {
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dev, Err: err}
	}
	defer unix.Close(fd)
	return unix.IoctlLoopGetStatus64(fd)
}

// loopNumber is N of /dev/loopN (-1 for another name).
func loopNumber(dev string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dev), "loop"))
	if err != nil {
		return -1
	}
	return n
}

// attach returns the loop device backing file, attaching one if none does.
// Direct I/O avoids double caching of the lvol in the page cache. The
// sector size is pinned to 4096 bytes: with direct I/O the kernel derives
// it from the backing file's alignment, which changes once an XFS file is
// reflinked, and a volume's geometry must not change under its filesystem.
// readOnly attaches with LO_FLAGS_READ_ONLY (losetup --read-only): the
// kernel opens the file read-only and refuses every write to the device
// (EPERM), whoever opens it. A device already attached is returned as it
// is; the caller compares its mode (loopReadOnly).
func (l *loopDevices) attach(ctx context.Context, file string, readOnly bool) (string, error) {
	if dev, err := l.find(ctx, file); err != nil || dev != "" {
		return dev, err
	}
	args := []string{"--find", "--show", "--direct-io=on", "--sector-size", "4096"}
	if readOnly {
		args = append(args, "--read-only")
	}
	out, err := l.exec.CommandContext(ctx, "losetup", append(args, file)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("losetup --find %s: %v: %s", file, err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// loopReadOnly reports whether the block device dev refuses writes, from
// /sys/block/NAME/ro (1 for a loop device attached read-only).
func loopReadOnly(dev string) (bool, error) {
	b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "ro"))
	if err != nil {
		return false, fmt.Errorf("read-only flag of %s: %w", dev, err)
	}
	return strings.TrimSpace(string(b)) == "1", nil
}

// loopBacking returns the file behind loop device dev as the kernel names
// it (suffixed " (deleted)" once the file is unlinked), "" when dev is no
// longer a loop device with a backing file (detached).
func loopBacking(dev string) string {
	b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop", "backing_file"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// detachSettle bounds how long detach waits for a device it detached to
// let go of its file.
const detachSettle = 3 * time.Second

// detach releases every loop device backing file; none is not an error.
// A device still in use is only marked for autoclear by the kernel, so each
// device is detached once rather than until the lookup comes back empty;
// then detach waits (up to detachSettle) for the kernel to let go: udev's
// probe of a device just closed after writing holds it open for a moment,
// and a DeleteVolume right after NodeUnstageVolume returned would find the
// volume still attached (FailedPrecondition).
func (l *loopDevices) detach(ctx context.Context, file string) error {
	devs, err := l.list(ctx, file)
	if err != nil {
		return err
	}
	for _, dev := range devs {
		if out, err := l.exec.CommandContext(ctx, "losetup", "--detach", dev).CombinedOutput(); err != nil {
			return fmt.Errorf("losetup --detach %s: %v: %s", dev, err, strings.TrimSpace(string(out)))
		}
	}
	for deadline := time.Now().Add(detachSettle); len(devs) > 0 && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(20 * time.Millisecond):
		}
		if devs, err = l.list(ctx, file); err != nil {
			return nil // detached as asked; the lookup is only a courtesy
		}
	}
	return nil
}

// refresh makes the loop device pick up its backing file's new size
// (after ControllerExpandVolume grew the lvol).
func (l *loopDevices) refresh(ctx context.Context, dev string) error {
	if out, err := l.exec.CommandContext(ctx, "losetup", "--set-capacity", dev).CombinedOutput(); err != nil {
		return fmt.Errorf("losetup --set-capacity %s: %v: %s", dev, err, strings.TrimSpace(string(out)))
	}
	return nil
}
