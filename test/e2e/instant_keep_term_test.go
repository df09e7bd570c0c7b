package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/driver"
)

// TestInstantKeptTakeOverStoppedWhileTargetDown: the driver is killed
// while an instant volume hydrates and the backup target is down; the
// driver that takes the connection over waits for the target (the
// application's I/O waits with it) and is stopped gracefully (SIGTERM: a
// rollout, a kubelet restart of the pod) before the target is back. Its
// takeover ends unfinished, but the connection is not its to give up:
// the keeper must keep it for the next driver, which takes it over once
// the target is back, and the application's reads go on without an error.
func TestInstantKeptTakeOverStoppedWhileTargetDown(t *testing.T) {
	const size = 128 * mib
	sock := filepath.Join(t.TempDir(), "keeper.sock")
	keeper, _ := testutil.StartKeeper(t, sock)
	s3 := startS3(t)
	proxy := startOutageProxy(t, s3.srv.Endpoint)
	poolDir, dir := newPool(t), t.TempDir()
	opts := driver.Options{Endpoint: "unix://" + filepath.Join(dir, "csi.sock"), NodeID: "node-a", PoolDir: poolDir,
		StateDir: filepath.Join(dir, "state"), DriverName: driver.DefaultDriverName, FDKeeper: sock}
	s3.opts(s3.url(proxy.Addr))(&opts)
	noLocalBase(&opts)
	first := startChild(t, opts)
	offsets := []int64{0, size / 4, size / 2, 3 * size / 4}
	src := createVolume(t, first.Ctrl, "kterm-src", size, blockCap(), nil)
	sp := stagePublish(t, first.Node, src.GetVolumeId(), blockCap())
	writeDevice(t, sp.Path, 9, offsets, int(size/8))
	unpublishUnstage(t, sp)
	id := backup(t, first.Ctrl, src.GetVolumeId(), "kterm-b1", "")
	expect := deviceBytes(t, size, 9, offsets, int(size/8))

	resp, err := first.Ctrl.CreateVolume(rpcCtx(t), instantReq("kterm", id, size, blockCap()))
	if err != nil {
		t.Fatalf("instant CreateVolume: %v", err)
	}
	volID := resp.GetVolume().GetVolumeId()
	proxy.getDelay.Store(int64(500 * time.Millisecond))
	p := stagePublish(t, first.Node, volID, blockCap())
	app := startReader(t, p.Path, expect, size/2)
	time.Sleep(500 * time.Millisecond)

	back := proxy.outage(10 * time.Second)
	first.kill()
	second := startChild(t, opts) // its takeover waits for the target
	time.Sleep(2 * time.Second)
	if strings.Contains(second.log.String(), "took over") {
		t.Fatal("the second driver took over with the target down: nothing tested")
	}
	if _, err := second.terminate(t, 20*time.Second); err != nil {
		t.Fatalf("SIGTERM of the driver whose takeover waits: %v", err)
	}
	if keys, err := keeper.Keys(context.Background()); err != nil || len(keys) != 1 {
		t.Errorf("after a graceful stop of the driver whose takeover waited, the keeper holds %v (%v), want the volume's connection", keys, err)
	}
	<-back
	proxy.getDelay.Store(0)
	third := csitest.Start(t, "node-a", poolDir, func(o *driver.Options) {
		o.StateDir, o.BackupTargets, o.BackupCredentialsFile, o.FDKeeper = opts.StateDir, opts.BackupTargets, opts.BackupCredentialsFile, sock
	})
	time.Sleep(time.Second)
	reads, slowest := app.stop(t)
	t.Logf("%d reads, the slowest %v", reads, slowest)
	p.node = third.Node
	awaitReady(t, third, volID)
	readsBackup(t, p.Path, expect, 0, size)
	unpublishUnstage(t, p)
	noInstantLeft(t, third, volID)
}
