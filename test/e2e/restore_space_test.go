package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/driver"
)

// blockBackup creates a block volume of size bytes on n, writes chunk
// random bytes at each offset, backs it up and returns the backup's
// snapshot id and the volume's sha256.
func blockBackup(t *testing.T, n *csitest.Node, name string, size int64, offsets []int64, chunk int) (string, [32]byte) {
	t.Helper()
	vol := createVolume(t, n.Ctrl, name, size, blockCap(), nil)
	p := stagePublish(t, n.Node, vol.GetVolumeId(), blockCap())
	writeDevice(t, p.Path, 5, offsets, chunk)
	want := hashDevice(t, p.Path)
	unpublishUnstage(t, p)
	return backup(t, n.Ctrl, vol.GetVolumeId(), name+"-b1", ""), want
}

// statfsAvail is f_bavail of the filesystem at dir, in bytes.
func statfsAvail(t *testing.T, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// fill allocates n bytes in a new file at path (fallocate), as an
// application's write would; it returns the error of the allocation.
func fill(t *testing.T, path string, n int64) error {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return unix.Fallocate(int(f.Fd()), 0, 0, n)
}

// TestRestoreAdmission (issue 13 case 3) on a 1 GiB pool with a 64 MiB
// reserve: GetCapacity is statfs's available bytes less the reserve; a
// restore whose backup allocates more than that is ResourceExhausted and
// creates nothing; an admitted restore counts in GetCapacity while it
// runs; when an application then takes the space the restore was admitted
// for, the restore is stopped with ResourceExhausted before the pool goes
// below its reserve, leaves nothing behind, and the application's write
// succeeds.
func TestRestoreAdmission(t *testing.T) {
	const reserve, size = 64 * mib, 256 * mib
	s3 := startS3(t)
	proxy := startOutageProxy(t, s3.srv.Endpoint)
	fs := testutil.LoopFS(t, "xfs", 1<<30)
	n := csitest.Start(t, "node-a", filepath.Join(fs, "pool"), func(o *driver.Options) {
		s3.opts(s3.url(proxy.Addr))(o)
		o.PoolReserveBytes = reserve
		o.NoLocalBase = true // the restore must write what it admits
	})
	id, _ := blockBackup(t, n, "space-src", size, []int64{0, 64 * mib, 128 * mib, 192 * mib}, int(40*mib))
	alloc := manifestOf(t, openRepo(t, s3.url(""), s3.creds), id).AllocatedBytes
	if alloc != 160*mib {
		t.Fatalf("backup allocates %d bytes, want the 160 MiB written", alloc)
	}
	// The source and its backup base share 160 MiB, which GetCapacity
	// counts (docs/ARCHITECTURE.md "Space") and the base would give up for
	// the restore: delete both, so that only the restore and the
	// application compete.
	src, err := n.Pool.GetByName(rpcCtx(t), backend.KindVolume, "space-src")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Ctrl.DeleteVolume(rpcCtx(t), &csi.DeleteVolumeRequest{VolumeId: src.ID}); err != nil {
		t.Fatal(err)
	}
	unix.Sync() // XFS frees the deleted blocks in the background

	free := availableBytes(t, n)
	if want := statfsAvail(t, fs) - reserve; free < want-mib || free > want+mib {
		t.Fatalf("GetCapacity %d bytes, want statfs available less the reserve, %d", free, want)
	}
	filler := filepath.Join(fs, "filler")
	if err := fill(t, filler, free-alloc+16*mib); err != nil {
		t.Fatal(err)
	}
	_, err = n.Ctrl.CreateVolume(rpcCtx(t), restoreReq("too-big", id, size, blockCap()))
	wantCode(t, "restore into a pool without room", err, codes.ResourceExhausted, "reserve", "167772160")
	noVolume(t, n, "too-big")

	// Room for the restore and 80 MiB more; the restore goes slowly.
	if err := os.Truncate(filler, 0); err != nil {
		t.Fatal(err)
	}
	if err := fill(t, filler, availableBytes(t, n)-alloc-80*mib); err != nil {
		t.Fatal(err)
	}
	proxy.getDelay.Store(int64(2 * time.Second))
	req := restoreReq("mid", id, size, blockCap())
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	_, err = n.Ctrl.CreateVolume(ctx, req)
	cancel()
	wantCode(t, "admitted restore", err, codes.Aborted, "in progress")
	if got := availableBytes(t, n); got > 96*mib {
		t.Errorf("GetCapacity %d bytes while the restore runs: the 160 MiB it has still to write are not counted", got)
	}
	// An application takes 150 MiB: the restore no longer fits above the reserve.
	if err := fill(t, filepath.Join(fs, "app"), 150*mib); err != nil {
		t.Fatalf("the application's write failed: %v", err)
	}
	_, err = createRestored(t, n.Ctrl, req, 2*time.Second)
	wantCode(t, "restore overtaken by an application", err, codes.ResourceExhausted, "reserve")
	noVolume(t, n, "mid")
	if ckpts, _ := filepath.Glob(filepath.Join(n.Opts.StateDir, "restores", "*")); len(ckpts) != 0 {
		t.Errorf("checkpoints left by the stopped restore: %v", ckpts)
	}
	if avail := statfsAvail(t, fs); avail < reserve {
		t.Errorf("pool has %d bytes available, below its %d byte reserve", avail, reserve)
	}
}

// noVolume fails unless the pool has no volume called name.
func noVolume(t *testing.T, n *csitest.Node, name string) {
	t.Helper()
	if lv, err := n.Pool.GetByName(rpcCtx(t), backend.KindVolume, name); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("pool lookup of %s: %v (labels %v), want ErrNotFound", name, err, lv.Labels)
	}
}
