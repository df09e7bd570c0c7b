package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// releaseFUSE ends what a failed test left of chainvol's FUSE files under
// root: it aborts their connections (fusectl), which fails every request
// a dead or gone server left waiting, detaches the loop devices over files
// under root and unmounts the mounts lazily. A connection that the
// test's own keeper held alive and nobody serves would otherwise keep a
// process blocked in a FUSE request for ever (a D-state process that no
// signal ends), with its loop device and mount.
func releaseFUSE(t testing.TB, root string) {
	raw, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var mounts []string
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 || !strings.HasPrefix(f[4], root+"/") {
			continue
		}
		sep := 6
		for sep < len(f) && f[sep] != "-" {
			sep++
		}
		if sep+1 >= len(f) || f[sep+1] != "fuse.chainvol" {
			continue
		}
		mounts = append(mounts, f[4])
		if _, minor, ok := strings.Cut(f[2], ":"); ok {
			abortConnection(minor)
		}
	}
	for _, dev := range loopsUnder(root) {
		_ = exec.Command("losetup", "--detach", dev).Run()
	}
	for _, m := range mounts {
		_ = unix.Unmount(m, unix.MNT_DETACH)
	}
	if len(mounts) > 0 {
		t.Logf("released %d FUSE mounts a failed run left under %s: %v", len(mounts), root, mounts)
	}
}

// abortConnection aborts FUSE connection id through fusectl, mounting it
// if it is not.
func abortConnection(id string) {
	const ctl = "/sys/fs/fuse/connections"
	if _, err := os.Stat(filepath.Join(ctl, id)); err != nil {
		_ = unix.Mount("fusectl", ctl, "fusectl", 0, "")
	}
	_ = os.WriteFile(filepath.Join(ctl, id, "abort"), []byte("1"), 0)
}

// loopsUnder lists the loop devices whose backing file is under root
// (sysfs: no stat of the file, which a dead FUSE file would fail).
func loopsUnder(root string) []string {
	names, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var devs []string
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), root+"/") {
			devs = append(devs, "/dev/"+filepath.Base(filepath.Dir(filepath.Dir(n))))
		}
	}
	return devs
}
