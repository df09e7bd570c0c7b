package driver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/internal/testutil"
)

// TestLoopList: loopDevices.list finds what losetup --associated finds
// (the reference it replaced), in device order: both devices of a file
// attached twice, also through a symlink to it, one of another file, none
// of a file never attached or no longer; a missing file is an error.
func TestLoopList(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a.img"), filepath.Join(dir, "b.img"), filepath.Join(dir, "c.img")
	for _, f := range []string{a, b, c} {
		mustOK(t, os.WriteFile(f, make([]byte, 1<<20), 0o600))
	}
	attach := func(f string) string {
		dev := testutil.Run(t, "losetup", "--find", "--show", f)
		t.Cleanup(func() { _ = exec.Command("losetup", "--detach", dev).Run() })
		return dev
	}
	a1, a2, b1 := attach(a), attach(a), attach(b)
	link := filepath.Join(dir, "link")
	mustOK(t, os.Symlink(a, link))
	l := &loopDevices{}
	ctx := context.Background()
	for _, tc := range []struct {
		file string
		want []string
	}{{a, sortedLoops(a1, a2)}, {link, sortedLoops(a1, a2)}, {b, []string{b1}}, {c, nil}} {
		got, err := l.list(ctx, tc.file)
		mustOK(t, err)
		ref := strings.Fields(testutil.Run(t, "losetup", "--noheadings", "--output", "NAME", "--associated", tc.file))
		if !slices.Equal(got, tc.want) || !slices.Equal(got, sortedLoops(ref...)) {
			t.Errorf("list(%s) = %v, want %v (losetup --associated: %v)", filepath.Base(tc.file), got, tc.want, ref)
		}
	}
	testutil.Run(t, "losetup", "--detach", b1)
	if got, err := l.list(ctx, b); err != nil || len(got) != 0 {
		t.Errorf("list of a detached file = %v, %v; want none", got, err)
	}
	if _, err := l.list(ctx, filepath.Join(dir, "missing.img")); err == nil {
		t.Error("list of a missing file: no error")
	}
}

// sortedLoops is devs in device number order.
func sortedLoops(devs ...string) []string {
	out := slices.Clone(devs)
	slices.SortFunc(out, func(x, y string) int { return loopNumber(x) - loopNumber(y) })
	return out
}

// TestLoopListBrokenNeighbour: a loop device whose backing file
// cannot be stat'ed by the kernel (here: on an XFS that shut down, whose
// getattr answers EIO; a dead FUSE file answers ENOTCONN alike) must not
// hide every other file's loop devices. losetup --associated, which list
// replaced, skips such a device (util-linux falls back to the name); list
// returned LOOP_GET_STATUS64's error for every file on the node (session 10).
func TestLoopListBrokenNeighbour(t *testing.T) {
	testutil.RequireRoot(t)
	mnt := testutil.LoopFS(t, "xfs", 512<<20)
	broken := filepath.Join(mnt, "broken.img")
	good := filepath.Join(t.TempDir(), "good.img")
	for _, f := range []string{broken, good} {
		mustOK(t, os.WriteFile(f, make([]byte, 1<<20), 0o600))
	}
	attach := func(f string) string {
		dev := testutil.Run(t, "losetup", "--find", "--show", f)
		t.Cleanup(func() { _ = exec.Command("losetup", "--detach", dev).Run() })
		return dev
	}
	attach(broken)
	g := attach(good)
	testutil.PowerLoss(t, mnt)

	ref := strings.Fields(testutil.Run(t, "losetup", "--noheadings", "--output", "NAME", "--associated", good))
	t.Logf("losetup --associated %s: %v", good, ref)
	got, err := (&loopDevices{}).list(context.Background(), good)
	if err != nil || !slices.Equal(got, []string{g}) {
		t.Fatalf("list(good) = %v, %v; want [%s] (losetup --associated: %v)", got, err, g, ref)
	}
}

type oneFileRoot struct{ fs.Inode }

func (r *oneFileRoot) OnAdd(ctx context.Context) {
	f := &fs.MemRegularFile{Data: make([]byte, 1<<20), Attr: fuse.Attr{Mode: 0o600}}
	r.AddChild("img", r.NewPersistentInode(ctx, f, fs.StableAttr{}), false)
}

// TestLoopListDeadFUSE : a loop device over the FUSE file of a
// server that is gone (connection aborted, as for a killed driver) makes
// list of any other file fail once the kernel asks the server for the
// file's attributes (attr timeout: the lazy server's is 24 h, here 0 and
// 24 h).
func TestLoopListDeadFUSE(t *testing.T) {
	testutil.RequireRoot(t)
	if _, err := os.Stat("/sys/fs/fuse/connections/abort"); err != nil {
		if _, err := os.ReadDir("/sys/fs/fuse/connections"); err == nil {
			if out, err := exec.Command("mount", "-t", "fusectl", "none", "/sys/fs/fuse/connections").CombinedOutput(); err == nil {
				t.Cleanup(func() { _ = exec.Command("umount", "/sys/fs/fuse/connections").Run() })
			} else {
				t.Logf("mount fusectl: %v %s", err, out)
			}
		}
	}
	for _, attr := range []time.Duration{0, 24 * time.Hour} {
		t.Run(attr.String(), func(t *testing.T) {
			dir := t.TempDir()
			srv, err := fs.Mount(dir, &oneFileRoot{}, &fs.Options{EntryTimeout: &attr, AttrTimeout: &attr,
				MountOptions: fuse.MountOptions{DirectMount: true, DirectMountStrict: true}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
			var st unix.Stat_t
			mustOK(t, unix.Stat(dir, &st))
			dead := testutil.Run(t, "losetup", "--find", "--show", filepath.Join(dir, "img"))
			t.Cleanup(func() { _ = exec.Command("losetup", "--detach", dead).Run() })
			good := filepath.Join(t.TempDir(), "good.img")
			mustOK(t, os.WriteFile(good, make([]byte, 1<<20), 0o600))
			g := testutil.Run(t, "losetup", "--find", "--show", good)
			t.Cleanup(func() { _ = exec.Command("losetup", "--detach", g).Run() })
			abort := fmt.Sprintf("/sys/fs/fuse/connections/%d/abort", unix.Minor(st.Dev))
			mustOK(t, os.WriteFile(abort, []byte("1"), 0))
			srv.Wait()
			_, serr := os.Stat(filepath.Join(dir, "img"))
			t.Logf("stat of the dead FUSE file: %v", serr)
			got, err := (&loopDevices{}).list(context.Background(), good)
			if err != nil || !slices.Equal(got, []string{g}) {
				t.Fatalf("list(good) = %v, %v; want [%s]", got, err, g)
			}
		})
	}
}
