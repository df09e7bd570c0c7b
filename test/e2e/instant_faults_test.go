package e2e

import (
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/internal/csitest"
)

// instantFS is an ext4 backup of a small tree on a driver whose target is
// behind a slow proxy: what the tests below restore instantly.
type instantFS struct {
	n     *csitest.Node
	proxy *slowProxy
	id    string // the backup's snapshot id
	want  tree   // the source's files
}

// startInstantFS backs up an ext4 volume called name holding 24 MiB of
// files, with the proxy not delaying yet.
func startInstantFS(t *testing.T, name string) instantFS {
	s3 := startS3(t)
	f := instantFS{proxy: startSlowProxy(t, s3.srv.Endpoint)}
	f.n = startDriver(t, "node-a", both(s3.opts(s3.url(f.proxy.Addr)), noLocalBase))
	src := createVolume(t, f.n.Ctrl, name, volSize, mountCap("ext4"), nil)
	p := stagePublish(t, f.n.Node, src.GetVolumeId(), mountCap("ext4"))
	writeTree(t, p.Path, 7, 24*mib)
	f.want = hashTree(t, p.Path)
	f.id = backup(t, f.n.Ctrl, src.GetVolumeId(), name+"-b1", "")
	unpublishUnstage(t, p)
	return f
}

// restore creates the instant restore called name of the backup and
// returns its volume id.
func (f instantFS) restore(t *testing.T, name string, c *csi.VolumeCapability) string {
	t.Helper()
	resp, err := f.n.Ctrl.CreateVolume(rpcCtx(t), instantReq(name, f.id, volSize, c))
	if err != nil {
		t.Fatalf("instant CreateVolume %s: %v", name, err)
	}
	return resp.GetVolume().GetVolumeId()
}

// stagedDevice is the device number of the filesystem staged at path.
func stagedDevice(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Dev
}

// TestInstantStageAfterReadyWhileStaged: a volume staged over its instant
// image stays there when hydration ends (no live switch). Then the
// kubelet's retry of NodeStageVolume at the same path is OK, and a stage
// at a second path mounts the same device: never a second loop device
// over the data file, which would mount one ext4 twice through two
// devices (two journals over one disk: corruption).
func TestInstantStageAfterReadyWhileStaged(t *testing.T) {
	f := startInstantFS(t, "twice-src")
	f.proxy.setDelay(300 * time.Millisecond)
	volID := f.restore(t, "twice", mountCap("ext4"))
	a := stagePublish(t, f.n.Node, volID, mountCap("ext4"))
	f.want["written"] = writeSynced(t, a.Path+"/written", int(2*mib))
	f.proxy.setDelay(0)
	awaitReady(t, f.n, volID)

	if _, err := f.n.Node.NodeStageVolume(rpcCtx(t), &csi.NodeStageVolumeRequest{
		VolumeId: volID, StagingTargetPath: a.staging, VolumeCapability: mountCap("ext4"),
	}); err != nil {
		t.Errorf("NodeStageVolume retried at the same path after hydration ended: %v", err)
	}
	b := stagePublish(t, f.n.Node, volID, mountCap("ext4"))
	if da, db := stagedDevice(t, a.staging), stagedDevice(t, b.staging); da != db {
		t.Fatalf("second stage on device %d:%d (%s), the first on %d:%d (%s): one filesystem mounted through two devices",
			unix.Major(db), unix.Minor(db), stagedBacking(t, b), unix.Major(da), unix.Minor(da), stagedBacking(t, a))
	}
	sameTree(t, "second stage", b.Path, f.want)
	unpublishUnstage(t, b)
	unpublishUnstage(t, a)
	noInstantLeft(t, f.n, volID)
	c := stagePublish(t, f.n.Node, volID, mountCap("ext4"))
	sameTree(t, "stage after both unstaged", c.Path, f.want)
	unpublishUnstage(t, c)
}
