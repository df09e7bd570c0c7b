package e2e

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/internal/testutil"
)

// TestSnapshotWithoutReflink (issue 13 case 6): on an ext4 pool (no
// reflink) a snapshot of a mounted volume holding 512 MiB is refused with
// FailedPrecondition naming reflink, at once, and an application's
// 1-byte write + fsync meanwhile never blocks for 1 s (it blocked for the
// whole copy, 17.9 s for 1.2 GB); once the volume is unstaged, the same
// request takes the snapshot (a full copy, nothing to freeze).
func TestSnapshotWithoutReflink(t *testing.T) {
	testutil.RequireRoot(t)
	n := csitest.Start(t, "node-a", filepath.Join(testutil.LoopFS(t, "ext4", 2<<30), "pool"), nil)
	if n.Pool.Reflink() {
		t.Fatal("an ext4 pool reports reflink")
	}
	vol := createVolume(t, n.Ctrl, "busy", 1<<30, mountCap("ext4"), nil)
	p := stagePublish(t, n.Node, vol.GetVolumeId(), mountCap("ext4"))
	writeTree(t, p.Path, 6, 512*mib)
	syncDir(t, p.Path)

	var worst atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the application: 1 byte + fsync every 20 ms
		defer close(done)
		f, err := os.Create(filepath.Join(p.Path, "app.log"))
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			start := time.Now()
			if _, err := f.Write([]byte{'x'}); err == nil {
				err = f.Sync()
			}
			if d := time.Since(start); int64(d) > worst.Load() {
				worst.Store(int64(d))
			}
		}
	}()
	req := &csi.CreateSnapshotRequest{Name: "busy-snap", SourceVolumeId: vol.GetVolumeId()}
	start := time.Now()
	_, err := n.Ctrl.CreateSnapshot(rpcCtx(t), req)
	took := time.Since(start)
	time.Sleep(200 * time.Millisecond)
	close(stop)
	<-done
	wantCode(t, "snapshot of a mounted volume on a pool without reflink", err, codes.FailedPrecondition, "reflink", "freeze")
	if w := time.Duration(worst.Load()); took > time.Second || w > time.Second {
		t.Errorf("CreateSnapshot took %v; the application's write waited up to %v", took, w)
	}

	unpublishUnstage(t, p)
	resp, err := n.Ctrl.CreateSnapshot(rpcCtx(t), req)
	if err != nil || !resp.GetSnapshot().GetReadyToUse() {
		t.Fatalf("snapshot of the unstaged volume: %v, %v", resp, err)
	}
}
