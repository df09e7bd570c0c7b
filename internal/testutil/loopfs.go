package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// LoopFS creates a sparse image file of sizeBytes, attaches it to a loop
// device, formats it with fsType ("xfs" gets reflink=1, "btrfs", "ext4") and
// mounts it on a fresh temporary directory, whose path it returns. Everything
// is unmounted, detached and removed when the test ends. It requires root
// (RequireRoot is called) and fails the test on any error.
func LoopFS(t testing.TB, fsType string, sizeBytes int64) string {
	t.Helper()
	RequireRoot(t)
	dir := t.TempDir()
	img := filepath.Join(dir, "fs.img")
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(sizeBytes); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dev := Run(t, "losetup", "--find", "--show", img)
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", dev).Run() })
	switch fsType {
	case "xfs":
		Run(t, "mkfs.xfs", "-q", "-f", "-m", "reflink=1", dev)
	case "btrfs":
		Run(t, "mkfs.btrfs", "-q", "-f", dev)
	default:
		Run(t, "mkfs."+fsType, "-q", "-F", dev)
	}
	Run(t, "mount", dev, mnt)
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	return mnt
}

// Run executes a command, fails the test with its output on error, and
// returns its trimmed standard output.
func Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, msg)
	}
	return strings.TrimSpace(string(out))
}
