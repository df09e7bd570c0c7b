package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/internal/testutil"
)

// TestBackupOfMountedSource (issue 25 item 6.1): a backup of a device
// whose ext4 is mounted read-write, or of the image file behind it, is
// refused naming the mount point and the ways out; with --freeze the
// filesystem is frozen for the copy and thawed after, and the restored
// image mounts read-only on a read-only device (no journal to replay)
// holding the file written just before, still unsynced. Read-only mounted
// and unmounted devices back up as before. On main the first backup
// succeeded silently and its restore needed journal recovery.
func TestBackupOfMountedSource(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	c := &ctl{t: t}
	g := []string{"--state-dir", filepath.Join(dir, "state")}
	img := makeImage(t, dir)
	dev := attach(t, img)
	mnt := mountAt(t, dev, filepath.Join(dir, "mnt"), "rw")
	// Unsynced: in the page cache and the journal only, not yet on dev.
	writeRandom(t, filepath.Join(mnt, "fresh"), 0, 2<<20)
	want := sha(t, filepath.Join(mnt, "fresh"))

	for _, from := range []string{dev, img} {
		msg := c.fails(1, append(g, "backup", "create", "--from", from, "--chain", "lab/live")...)
		for _, s := range []string{mnt, "mounted read-write", "unmount", "snapshot", "--freeze", "--allow-live"} {
			if !strings.Contains(msg, s) {
				t.Errorf("backup of %s mounted read-write: %q does not say %q", from, msg, s)
			}
		}
	}
	c.ok(append(g, "backup", "create", "--from", dev, "--chain", "lab/live", "--freeze")...)
	// Thawed: a frozen filesystem refuses another freeze (EBUSY).
	testutil.Run(t, "fsfreeze", "--freeze", mnt)
	testutil.Run(t, "fsfreeze", "--unfreeze", mnt)

	out := filepath.Join(dir, "restored.img")
	c.ok(append(g, "restore", "lab/live@latest", "--to", out)...)
	rdev := testutil.Run(t, "losetup", "--find", "--show", "--read-only", out)
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", rdev).Run() })
	rmnt := mountAt(t, rdev, filepath.Join(dir, "rmnt"), "ro")
	if got := sha(t, filepath.Join(rmnt, "fresh")); got != want {
		t.Errorf("restored file: sha256 %s, want %s", got, want)
	}
	if got, want := sha(t, filepath.Join(rmnt, "sub", "filea")), sha(t, filepath.Join(mnt, "sub", "filea")); got != want {
		t.Errorf("restored sub/filea: sha256 %s, want %s", got, want)
	}

	testutil.Run(t, "mount", "-o", "remount,ro", mnt)
	c.ok(append(g, "backup", "create", "--from", dev, "--chain", "lab/live")...)
	testutil.Run(t, "umount", mnt)
	c.ok(append(g, "backup", "create", "--from", dev, "--chain", "lab/live")...)
}

// mountAt mounts dev at dir (created) with options, unmounted at the end.
func mountAt(t *testing.T, dev, dir, options string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.Run(t, "mount", "-o", options, dev, dir)
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	return dir
}
