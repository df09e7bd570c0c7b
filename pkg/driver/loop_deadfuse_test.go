package driver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/internal/testutil"
)

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
