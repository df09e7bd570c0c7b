package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/driver"
)

// TestInstantKeptKilledInUnstage: the driver is killed in
// NodeUnstageVolume of a hydrating instant volume after it detached the
// loop device and unmounted the FUSE file, before the keeper's Drop (the
// state is made by hand: the same unmounts, then SIGKILL). The keeper
// still holds the connection, which the unmount aborted. The new driver
// must not count that connection as served: the kubelet, whose unstage
// failed, stages the volume again at the same path, which must work and
// read the backup; after unstage nothing is left, in the keeper neither.
func TestInstantKeptKilledInUnstage(t *testing.T) {
	const size = 256 * mib
	sock := filepath.Join(t.TempDir(), "keeper.sock")
	keeper, _ := testutil.StartKeeper(t, sock)
	r := startRestartRigWith(t, "inst-kun-src", size, func(o *driver.Options) { o.FDKeeper = sock })
	id := backup(t, r.first.Ctrl, r.vol.GetVolumeId(), "inst-kun-b1", "")
	expect := expectedImage(t, size)
	resp, err := r.first.Ctrl.CreateVolume(rpcCtx(t), instantReq("inst-kun", id, size, blockCap()))
	if err != nil {
		t.Fatalf("instant CreateVolume: %v", err)
	}
	volID := resp.GetVolume().GetVolumeId()
	r.proxy.setDelay(time.Second) // a second a GET: it still hydrates after the restart
	p := stagePublish(t, r.first.Node, volID, blockCap())
	readsBackup(t, p.Path, expect, 0, mib)

	// NodeUnpublishVolume, then NodeUnstageVolume up to the FUSE unmount.
	if _, err := r.first.Node.NodeUnpublishVolume(rpcCtx(t), &csi.NodeUnpublishVolumeRequest{VolumeId: volID, TargetPath: p.Path}); err != nil {
		t.Fatal(err)
	}
	_ = exec.Command("umount", "-R", p.staging).Run()
	fuseDir := filepath.Join(r.opts.StateDir, "instant", volID)
	backing, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, b := range backing {
		if f, err := os.ReadFile(b); err == nil && strings.HasPrefix(string(f), fuseDir+"/") {
			dev := "/dev/" + filepath.Base(filepath.Dir(filepath.Dir(b)))
			if out, err := exec.Command("losetup", "--detach", dev).CombinedOutput(); err != nil {
				t.Fatalf("losetup --detach %s: %v: %s", dev, err, out)
			}
		}
	}
	if err := unix.Unmount(fuseDir, 0); err != nil {
		t.Fatalf("unmount the FUSE file: %v", err)
	}
	if !hydrating(t, &csitest.Node{Node: r.first.Node}, volID) {
		t.Fatal("hydrated before the kill: nothing tested")
	}
	r.first.kill()
	if keys, _ := keeper.Keys(context.Background()); len(keys) != 1 {
		t.Fatalf("the keeper holds %v, want the volume's connection", keys)
	}

	second := r.restart(t)
	if !hydrating(t, second, volID) {
		t.Fatal("hydrated before the stage: nothing tested")
	}
	p.node = second.Node
	p.done = false
	// The kubelet stages it again at the same path (the unstage never answered).
	if _, err := second.Node.NodeStageVolume(rpcCtx(t), &csi.NodeStageVolumeRequest{
		VolumeId: volID, StagingTargetPath: p.staging, VolumeCapability: blockCap()}); err != nil {
		t.Fatalf("NodeStageVolume after a driver killed in NodeUnstageVolume: %v", err)
	}
	if _, err := second.Node.NodePublishVolume(rpcCtx(t), &csi.NodePublishVolumeRequest{
		VolumeId: volID, StagingTargetPath: p.staging, TargetPath: p.Path, VolumeCapability: blockCap()}); err != nil {
		t.Fatalf("NodePublishVolume: %v", err)
	}
	r.proxy.setDelay(0)
	readsBackup(t, p.Path, expect, 0, size)
	unpublishUnstage(t, p)
	awaitReady(t, second, volID)
	noInstantLeft(t, second, volID)
	if keys, err := keeper.Keys(context.Background()); err != nil || len(keys) != 0 {
		t.Fatalf("after unstage the keeper holds %v (%v), want nothing", keys, err)
	}
}
