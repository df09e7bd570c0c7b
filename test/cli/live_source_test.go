package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

// TestBackupFreezeThawsOnEveryExit (issue 25 item 6.1): a backup with
// --freeze thaws the filesystem when the backup fails (a chain of another
// owner) and when it is interrupted by SIGINT or SIGHUP mid-copy; a
// frozen filesystem would refuse the freeze that checks it.
func TestBackupFreezeThawsOnEveryExit(t *testing.T) {
	testutil.RequireRoot(t)
	srv := testutil.StartS3(t)
	proxy := startSlowBlocks(t, srv.Endpoint)
	srv.Endpoint = proxy.addr
	dir := t.TempDir()
	c := &ctl{t: t, env: []string{"CHAINVOL_TARGETS=s3=" + srv.URL("chainvol"),
		"CHAINVOL_ACCESS_KEY_ID=" + srv.AccessKey, "CHAINVOL_SECRET_ACCESS_KEY=" + srv.SecretKey}}
	dev := attach(t, makeImage(t, dir))
	mnt := mountAt(t, dev, filepath.Join(dir, "mnt"), "rw")
	t.Cleanup(func() { _ = exec.Command("fsfreeze", "--unfreeze", mnt).Run() }) // before the umount
	create := []string{"--state-dir", filepath.Join(dir, "state"), "backup", "create", "--from", dev,
		"--chain", "s3:lab/f", "--block-size", "1048576", "--freeze"}
	thawed := func(after string) {
		t.Helper()
		if out, err := exec.Command("fsfreeze", "--freeze", mnt).CombinedOutput(); err != nil {
			t.Fatalf("after %s the filesystem is still frozen: %v %s", after, err, out)
		}
		testutil.Run(t, "fsfreeze", "--unfreeze", mnt)
	}

	c.ok(create...)
	msg := c.fails(1, append(create, "--owner", "host/elsewhere:/dev/sdz")...)
	if !strings.Contains(msg, "another source") {
		t.Errorf("backup into a chain of another owner: %s", msg)
	}
	thawed("a failed backup")

	proxy.putDelay.Store(int64(300 * time.Millisecond))
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGHUP} {
		writeRandom(t, filepath.Join(mnt, "new-"+sig.String()), 0, 8<<20) // new blocks to upload slowly
		interruptBackup(t, c, sig, append(create, "--workers", "1", "--progress-interval", "100ms"))
		thawed("a backup interrupted by " + sig.String())
	}
}

// interruptBackup runs chainvolctl with args, sends it sig once it reports
// progress (the copy runs, the filesystem is frozen) and wants exit code 1.
func interruptBackup(t *testing.T, c *ctl, sig syscall.Signal, args []string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), c.env...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stderr.String(), "backup lab/f"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no progress after 30 s: %s", stderr.String())
		}
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("backup interrupted by %s: %v, want exit code 1; stderr: %s", sig, err, stderr.String())
	}
}

// syncBuffer is a bytes.Buffer safe for a process writing it while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestBackupOfDiskWithMountedPartition: a disk (or the image file behind
// a loop device) whose partition is mounted read-write is refused naming
// the partition's mount point; --freeze freezes that filesystem and thaws
// it after.
func TestBackupOfDiskWithMountedPartition(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	c := &ctl{t: t}
	g := []string{"--state-dir", filepath.Join(dir, "state")}
	img := blank(t, filepath.Join(dir, "disk.img"))
	testutil.WriteMBR(t, img, testutil.Partition{Start: 2048, Sectors: imageSize/512 - 2048})
	dev := testutil.Run(t, "losetup", "--find", "--show", "--partscan", img)
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", dev).Run() })
	partNode(t, dev+"p1")
	testutil.Run(t, "mkfs.ext4", "-q", "-F", dev+"p1")
	mnt := mountAt(t, dev+"p1", filepath.Join(dir, "mnt"), "rw")
	t.Cleanup(func() { _ = exec.Command("fsfreeze", "--unfreeze", mnt).Run() })
	for _, from := range []string{dev, img} {
		msg := c.fails(1, append(g, "backup", "create", "--from", from, "--chain", "lab/disk")...)
		if !strings.Contains(msg, mnt+" ("+dev+"p1)") || !strings.Contains(msg, "--freeze") {
			t.Errorf("backup of %s with a partition mounted read-write: %q", from, msg)
		}
	}
	c.ok(append(g, "backup", "create", "--from", dev, "--chain", "lab/disk", "--freeze")...)
	testutil.Run(t, "fsfreeze", "--freeze", mnt) // fails if still frozen
	testutil.Run(t, "fsfreeze", "--unfreeze", mnt)
}

// partNode makes sure partition part (/dev/loopNp1, the first) and its
// device node exist: a kernel without CONFIG_MSDOS_PARTITION does not find
// it (partx adds it), and without udev (a container) nothing creates the
// node, so it is made from sysfs and removed at the end.
func partNode(t *testing.T, part string) {
	t.Helper()
	if _, err := os.Stat(part); err == nil {
		return
	}
	sys := filepath.Join("/sys/class/block", filepath.Base(part), "dev")
	if _, err := os.Stat(sys); err != nil {
		// A kernel without the DOS partition parser: add it by hand (BLKPG).
		testutil.Run(t, "partx", "-a", strings.TrimSuffix(part, "p1"))
		if _, err := os.Stat(part); err == nil {
			return // devtmpfs made the node
		}
	}
	data, err := os.ReadFile(sys)
	if err != nil {
		t.Fatalf("the kernel did not find the partition %s: %v", part, err)
	}
	var maj, min uint32
	if _, err := fmt.Sscanf(strings.TrimSpace(string(data)), "%d:%d", &maj, &min); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(part, unix.S_IFBLK|0o600, int(unix.Mkdev(maj, min))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(part) })
}
