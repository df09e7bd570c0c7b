package cli

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/internal/testutil"
)

// mountRun is a running "backup mount".
type mountRun struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	dir            string
}

// startMount starts "backup mount REF DIR -o json" and returns once DIR
// holds what it mounts (a file or directory entry appears).
func (e *restoreEnv) startMount(t testing.TB, ref string) *mountRun {
	t.Helper()
	m := &mountRun{dir: filepath.Join(e.dir, "browse")}
	if err := os.MkdirAll(m.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	m.cmd = exec.Command(binary, e.args("backup", "mount", ref, m.dir, "-o", "json")...)
	m.cmd.Env = append(os.Environ(), e.c.env...)
	m.cmd.Stdout, m.cmd.Stderr = &m.stdout, &m.stderr
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.cmd.Process.Kill(); _ = exec.Command("umount", "-l", m.dir).Run() })
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if ents, _ := os.ReadDir(m.dir); len(ents) > 0 {
			return m
		}
		if time.Now().After(deadline) || m.cmd.ProcessState != nil {
			t.Fatalf("backup mount: nothing at %s after 60 s: %s", m.dir, m.stderr.String())
		}
	}
}

// wait waits for the command's end and returns its JSON result.
func (m *mountRun) wait(t testing.TB) mountOut {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- m.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("backup mount: %v\nstderr: %s", err, m.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("backup mount did not end 60 s after it was told to: %s", m.stderr.String())
	}
	return decode[mountOut](t, m.stdout.String())
}

type mountOut struct {
	FSType        string `json:"fsType"`
	Image         string `json:"image"`
	Blocks        int64  `json:"blocks"`
	DataBlocks    int64  `json:"dataBlocks"`
	FetchedBlocks int64  `json:"fetchedBlocks"`
	FetchedBytes  int64  `json:"fetchedBytes"`
}

// checkNothingLeft fails if a mount, a loop device or a FUSE filesystem
// of "backup mount" is left.
func checkNothingLeft(t testing.TB, dir string) {
	t.Helper()
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	for _, l := range strings.Split(string(mi), "\n") {
		if dir != "" && strings.Contains(l, " "+dir+" ") || strings.Contains(l, "chainvol-backup-mount-") || strings.Contains(l, "chainvol-backup-serve-") {
			t.Errorf("left mounted: %s", l)
		}
	}
	if out, _ := exec.Command("losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE").Output(); strings.Contains(string(out), "chainvol-backup-mount-") {
		t.Errorf("loop device left: %s", out)
	}
	if ents, _ := filepath.Glob(filepath.Join(os.TempDir(), "chainvol-backup-mount-*")); len(ents) > 0 {
		t.Errorf("FUSE directories left: %v", ents)
	}
}

// TestBackupMount (issue 27): "backup mount" of an ext4 and of an XFS
// backup lists the source's tree (names, kinds, symlink targets) and reads
// every file but one with the source's sha256, having fetched some but
// fewer blocks than the image's data blocks (the unread 5 MiB file's are
// not among them); writes are refused; SIGINT ends it with nothing left
// mounted or attached and the counts printed; so does "umount DIR".
func TestBackupMount(t *testing.T) {
	testutil.RequireFUSE(t)
	for _, c := range []struct {
		fsType string
		size   int64
	}{{"ext4", imageSize}, {"xfs", 320 << 20}} {
		t.Run(c.fsType, func(t *testing.T) {
			e := newRestoreEnvOf(t, func(t testing.TB, dir string) string { return makeFSImage(t, dir, c.fsType, c.size, browseTree) })
			m := e.startMount(t, "s3:lab/x@latest")
			checkBrowsed(t, m.dir, filepath.Join(e.dir, "content"), "sub/fileb")
			if err := os.WriteFile(filepath.Join(m.dir, "x"), nil, 0o644); err == nil {
				t.Error("a write to the mounted backup succeeded")
			}
			if err := m.cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			res := m.wait(t)
			t.Logf("%+v; stderr: %s", res, m.stderr.String())
			if res.FSType != c.fsType || res.FetchedBlocks == 0 || res.FetchedBlocks >= res.DataBlocks || res.Blocks != c.size/blockSize {
				t.Errorf("result %+v: want %s, %d blocks, some but fewer than all data blocks fetched", res, c.fsType, c.size/blockSize)
			}
			checkNothingLeft(t, m.dir)

			m = e.startMount(t, "s3:lab/x@latest")
			testutil.Run(t, "umount", m.dir)
			m.wait(t)
			checkNothingLeft(t, m.dir)
		})
	}
}

// browseTree adds to makeFSImage's tree what browsing must show as it
// is: an empty file, a nested directory and symlinks (inside the tree, out
// of it by an absolute and by a relative path).
func browseTree(t testing.TB, src string) {
	t.Helper()
	for _, err := range []error{
		os.MkdirAll(filepath.Join(src, "sub", "deep"), 0o755),
		os.WriteFile(filepath.Join(src, "sub", "deep", "small"), []byte("a small file\n"), 0o644),
		os.WriteFile(filepath.Join(src, "empty"), nil, 0o644),
		os.Symlink("filed", filepath.Join(src, "sub", "inside")),
		os.Symlink("/etc/hostname", filepath.Join(src, "sub", "escape")),
		os.Symlink("../../etc/hostname", filepath.Join(src, "sub", "up")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// checkBrowsed fails unless the tree at mounted holds what the tree at
// content holds (lost+found aside) and every regular file but unread
// reads with its sha256.
func checkBrowsed(t testing.TB, mounted, content, unread string) {
	t.Helper()
	want, got := treeOf(t, content, unread), treeOf(t, mounted, unread)
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s in the mounted backup: %q, want %q", p, got[p], w)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s in the mounted backup is not in the source", p)
		}
	}
}

// treeOf maps every path under root (but root and lost+found) to what it
// is: "dir", "link TARGET", "file SHA256" ("file" for skip, not read).
func treeOf(t testing.TB, root, skip string) map[string]string {
	t.Helper()
	tree := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case rel == ".":
		case rel == "lost+found":
			return filepath.SkipDir
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			tree[rel] = "link " + target
			return err
		case d.IsDir():
			tree[rel] = "dir"
		case rel == skip:
			tree[rel] = "file"
		default:
			tree[rel] = "file " + sha(t, p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	return tree
}

// TestBackupMountRaw: a backup without a filesystem is offered as its raw
// image file, which reads as the source.
func TestBackupMountRaw(t *testing.T) {
	testutil.RequireFUSE(t)
	e := newRestoreEnv(t)
	raw := e.rawBackup(t, 8<<20+5)
	m := e.startMount(t, "s3:lab/raw@latest")
	img := filepath.Join(m.dir, "image")
	var sfs syscall.Statfs_t
	if err := syscall.Statfs(m.dir, &sfs); err != nil || sfs.Flags&(unix.ST_RDONLY|unix.ST_NOEXEC|unix.ST_NOSUID|unix.ST_NODEV) != unix.ST_RDONLY|unix.ST_NOEXEC|unix.ST_NOSUID|unix.ST_NODEV {
		t.Errorf("the raw image's mount: statfs flags %#x (%v), want ro,noexec,nosuid,nodev", sfs.Flags, err)
	}
	if got, want := sha(t, img), sha(t, raw); got != want {
		t.Errorf("raw image: sha256 %s, want %s", got, want)
	}
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	res := m.wait(t)
	if res.FSType != "" || res.Image != img || res.FetchedBlocks != res.DataBlocks {
		t.Errorf("result %+v: want the raw image %s, every block fetched", res, img)
	}
	checkNothingLeft(t, m.dir)
}

// TestBackupMountKilled: after a SIGKILL of "backup mount" a read of a
// file not read before fails (the FUSE connection is gone), never with
// other bytes, and the commands docs/operator.md gives (umount DIR,
// losetup -d DEVICE, umount of the image's directory) leave nothing.
func TestBackupMountKilled(t *testing.T) {
	testutil.RequireFUSE(t)
	e := newRestoreEnv(t)
	m := e.startMount(t, "s3:lab/x@latest")
	got := regexp.MustCompile(`device (/dev/loop\d+), image (\S+)/image\)`).FindStringSubmatch(m.stderr.String())
	if got == nil {
		t.Fatalf("no device and image printed: %s", m.stderr.String())
	}
	dev, fuseDir := got[1], got[2]
	if err := m.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = m.cmd.Wait()
	// Nothing of sub/ was read before the kill: no page of it is cached.
	if data, err := os.ReadFile(filepath.Join(m.dir, "sub", "fileb")); err == nil {
		t.Fatalf("a read after the kill returned %d bytes", len(data))
	} else {
		t.Logf("read after the kill: %v", err)
	}
	// Rerun on the same DIR: refused, naming what is left and how to undo it
	// (not "not empty", which sends a user to delete the backup's files).
	stderr := e.c.fails(2, e.args("backup", "mount", "s3:lab/x@latest", m.dir)...)
	if !strings.Contains(stderr, "still mounted") || !strings.Contains(stderr, "umount "+m.dir+"; losetup -d "+dev+"; umount "+fuseDir) {
		t.Errorf("rerun on the killed mount's DIR: %s", stderr)
	}
	testutil.Run(t, "umount", m.dir)
	testutil.Run(t, "losetup", "-d", dev)
	testutil.Run(t, "umount", fuseDir)
	if err := os.Remove(fuseDir); err != nil {
		t.Error(err)
	}
	checkNothingLeft(t, m.dir)
}

// rawBackup backs up a file of n random bytes (no filesystem) as chain
// s3:lab/raw and returns its path.
func (e *restoreEnv) rawBackup(t *testing.T, n int) string {
	t.Helper()
	raw := filepath.Join(e.dir, "raw.img")
	writeRandom(t, raw, 0, n)
	e.c.ok(e.args("backup", "create", "--from", raw, "--chain", "s3:lab/raw", "--block-size", "1048576")...)
	return raw
}
