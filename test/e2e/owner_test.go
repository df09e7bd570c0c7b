package e2e

import (
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/pkg/driver"
)

// TestTwoClustersOneBucket: two drivers with different cluster ids back
// up a claim of the same namespace and name to one bucket prefix. The
// second cluster's backup is refused (FailedPrecondition naming both
// owners) instead of becoming an "incremental" of the first cluster's
// chain, so the first cluster's @latest restores its own bytes; with a
// target prefix of its own the second cluster's @latest restores its own.
func TestTwoClustersOneBucket(t *testing.T) {
	s3 := startS3(t)
	url := s3.url("")
	cluster := func(id, url string) func(*driver.Options) {
		return func(o *driver.Options) { s3.opts(url)(o); o.ClusterID = id }
	}
	a := startDriver(t, "node-a", cluster("one", url))
	b := startDriver(t, "node-b", cluster("two", url))
	write := func(n *csitest.Node, name string, seed uint64) (string, tree) {
		v := createVolume(t, n.Ctrl, name, volSize, mountCap("ext4"), pvcParams("shop", "db"))
		p := stagePublish(t, n.Node, v.GetVolumeId(), mountCap("ext4"))
		writeTree(t, p.Path, seed, 8*mib)
		want := hashTree(t, p.Path)
		unpublishUnstage(t, p)
		return v.GetVolumeId(), want
	}
	va, wantA := write(a, "pvc-one", 1)
	backup(t, a.Ctrl, va, "snap-one", "")
	vb, _ := write(b, "pvc-two", 2)
	err := backupErr(t, b.Ctrl, &csi.CreateSnapshotRequest{Name: "snap-two", SourceVolumeId: vb, Parameters: backupParams("")})
	wantCode(t, "backup of cluster two into cluster one's chain", err, codes.FailedPrecondition, "cluster/one", "cluster/two", "take")

	latest := func(n *csitest.Node, name string, want tree) {
		params := pvcParams("shop", "db")
		params["fromBackup"] = offsite + ":shop/db@latest"
		v := restore(t, n.Ctrl, &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4")},
			CapacityRange: &csi.CapacityRange{RequiredBytes: volSize}, Parameters: params})
		p := stagePublish(t, n.Node, v.GetVolumeId(), mountCap("ext4"))
		sameTree(t, name+" from shop/db@latest", p.Path, want)
		unpublishUnstage(t, p)
	}
	latest(a, "restore-one", wantA)
	b2 := startDriver(t, "node-b2", cluster("two", s3.srv.URL("e2e-two")))
	vb2, wantB2 := write(b2, "pvc-two", 2)
	backup(t, b2.Ctrl, vb2, "snap-two", "")
	latest(b2, "restore-two", wantB2)
}

// backupErr calls CreateSnapshot, as the external-snapshotter does, until
// it answers an error (returned) or the backup is ready (a failure).
func backupErr(t *testing.T, ctrl csi.ControllerClient, req *csi.CreateSnapshotRequest) error {
	t.Helper()
	deadline := time.Now().Add(retryFor)
	for time.Now().Before(deadline) {
		resp, err := ctrl.CreateSnapshot(rpcCtx(t), req)
		if err != nil && status.Code(err) != codes.Aborted {
			return err
		}
		if resp.GetSnapshot().GetReadyToUse() {
			t.Fatalf("CreateSnapshot %s became ready; want a refusal", req.GetName())
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("CreateSnapshot %s neither failed nor became ready in %v", req.GetName(), retryFor)
	return nil
}
