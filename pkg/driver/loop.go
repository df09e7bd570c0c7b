package driver

import (
	"context"
	"fmt"
	"strings"

	utilexec "k8s.io/utils/exec"
)

// loopDevices attaches lvol data files to loop devices with util-linux
// losetup. The kernel is the only record of which device backs which file,
// so lookups survive a driver restart without state of our own.
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

// list returns every loop device backing file.
func (l *loopDevices) list(ctx context.Context, file string) ([]string, error) {
	out, err := l.exec.CommandContext(ctx, "losetup", "--noheadings", "--output", "NAME", "--associated", file).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("losetup --associated %s: %v: %s", file, err, strings.TrimSpace(string(out)))
	}
	return strings.Fields(string(out)), nil
}

// attach returns the loop device backing file, attaching one if none does.
// Direct I/O avoids double caching of the lvol in the page cache. The
// sector size is pinned to 4096 bytes: with direct I/O the kernel derives
// it from the backing file's alignment, which changes once an XFS file is
// reflinked, and a volume's geometry must not change under its filesystem.
func (l *loopDevices) attach(ctx context.Context, file string) (string, error) {
	if dev, err := l.find(ctx, file); err != nil || dev != "" {
		return dev, err
	}
	out, err := l.exec.CommandContext(ctx, "losetup", "--find", "--show", "--direct-io=on", "--sector-size", "4096", file).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("losetup --find %s: %v: %s", file, err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// detach releases every loop device backing file; none is not an error.
// A device still in use is only marked for autoclear by the kernel, so each
// device is detached once rather than until the lookup comes back empty.
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
