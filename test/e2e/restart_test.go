package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/pkg/driver"
)

// TestRestartMidRestore: the driver is killed (SIGKILL) while a restore
// runs; a new driver on the same pool and state directory answers the
// provisioner's retry of CreateVolume with the finished volume, and the
// volume holds exactly the backup's bytes.
func TestRestartMidRestore(t *testing.T) {
	const size = 256 * mib
	r := startRestartRig(t, "crash-src", size)
	first, proxy, opts, vol, want := r.first, r.proxy, r.opts, r.vol, r.want
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
	second := r.restart(t)
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

// restartRig is a driver (a child process, to be killed) on a pool and
// state directory that a second driver can take over, its target behind
// a slow proxy, with no local restore base, and a Block volume of it
// holding data.
type restartRig struct {
	first *childDriver
	proxy *slowProxy
	opts  driver.Options
	vol   *csi.Volume
	want  [32]byte // sha256 of vol's device
}

// startRestartRig starts the rig with a volume called name of size bytes.
func startRestartRig(t *testing.T, name string, size int64) restartRig {
	return startRestartRigWith(t, name, size, nil)
}

// startRestartRigWith is startRestartRig with more options for both
// drivers (the descriptor keeper's socket).
func startRestartRigWith(t *testing.T, name string, size int64, extra func(*driver.Options)) restartRig {
	s3 := startS3(t)
	r := restartRig{proxy: startSlowProxy(t, s3.srv.Endpoint)}
	poolDir, dir := newPool(t), t.TempDir()
	r.opts = driver.Options{Endpoint: "unix://" + filepath.Join(dir, "csi.sock"), NodeID: "node-a", PoolDir: poolDir,
		StateDir: filepath.Join(dir, "state"), DriverName: driver.DefaultDriverName}
	s3.opts(s3.url(r.proxy.Addr))(&r.opts)
	noLocalBase(&r.opts) // the restore must read the (slow) target
	if extra != nil {
		extra(&r.opts)
	}
	r.first = startChild(t, r.opts)
	r.vol = createVolume(t, r.first.Ctrl, name, size, blockCap(), nil)
	pub := stagePublish(t, r.first.Node, r.vol.GetVolumeId(), blockCap())
	writeDevice(t, pub.Path, 9, []int64{0, size / 4, size / 2, 3 * size / 4}, int(size/8))
	r.want = hashDevice(t, pub.Path)
	if err := pub.release(); err != nil {
		t.Fatal(err)
	}
	return r
}

// restart starts the second driver on the rig's pool and state.
func (r restartRig) restart(t *testing.T) *csitest.Node {
	return csitest.Start(t, "node-a", r.opts.PoolDir, func(o *driver.Options) {
		o.StateDir, o.BackupTargets, o.BackupCredentialsFile = r.opts.StateDir, r.opts.BackupTargets, r.opts.BackupCredentialsFile
		o.FDKeeper = r.opts.FDKeeper
	})
}
