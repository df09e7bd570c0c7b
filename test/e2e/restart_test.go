package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/pkg/driver"
)

// TestRestartMidRestore: the driver is killed (SIGKILL) while a restore
// runs; a new driver on the same pool and state directory answers the
// provisioner's retry of CreateVolume with the finished volume, and the
// volume holds exactly the backup's bytes.
func TestRestartMidRestore(t *testing.T) {
	s3 := startS3(t)
	proxy := startSlowProxy(t, s3.srv.Endpoint)
	poolDir, dir := newPool(t), t.TempDir()
	opts := driver.Options{Endpoint: "unix://" + filepath.Join(dir, "csi.sock"), NodeID: "node-a", PoolDir: poolDir,
		StateDir: filepath.Join(dir, "state"), DriverName: driver.DefaultDriverName}
	s3.opts(s3.url(proxy.Addr))(&opts)
	noLocalBase(&opts) // the restore must read the (slow) target
	first := startChild(t, opts)

	const size = 256 * mib
	vol := createVolume(t, first.Ctrl, "crash-src", size, blockCap(), nil)
	pub := stagePublish(t, first.Node, vol.GetVolumeId(), blockCap())
	writeDevice(t, pub.Path, 9, []int64{0, 64 * mib, 128 * mib, 192 * mib}, int(32*mib))
	want := hashDevice(t, pub.Path)
	if err := pub.release(); err != nil {
		t.Fatal(err)
	}
	id := backup(t, first.Ctrl, vol.GetVolumeId(), "crash-b1", "")

	// 32 block objects, 8 fetched at a time, 1 s each: about 4 s of restore.
	proxy.setDelay(time.Second)
	req := restoreReq("crash-copy", id, size, blockCap())
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	_, err := first.Ctrl.CreateVolume(ctx, req)
	cancel()
	wantCode(t, "first CreateVolume of a slow restore", err, codes.Aborted, "progress")
	time.Sleep(1500 * time.Millisecond)
	first.kill()
	ckpts, _ := filepath.Glob(filepath.Join(opts.StateDir, "restores", "*"))
	t.Logf("driver killed mid-restore; checkpoint files: %v", ckpts)

	proxy.setDelay(100 * time.Millisecond)
	second := csitest.Start(t, "node-a", poolDir, func(o *driver.Options) {
		o.StateDir, o.BackupTargets, o.BackupCredentialsFile = opts.StateDir, opts.BackupTargets, opts.BackupCredentialsFile
	})
	v, err := createRestored(t, second.Ctrl, req, 10*time.Second)
	if err != nil {
		t.Fatalf("CreateVolume after the restart: %v", err)
	}
	rp := stagePublish(t, second.Node, v.GetVolumeId(), blockCap())
	if got := hashDevice(t, rp.Path); got != want {
		t.Fatalf("volume restored across a restart: sha256 %x, want %x", got, want)
	}
	unpublishUnstage(t, rp)
	if _, err := os.Stat(filepath.Join(opts.StateDir, "restores", v.GetVolumeId()+".checkpoint")); !os.IsNotExist(err) {
		t.Errorf("checkpoint of the finished restore still there: %v", err)
	}
}
