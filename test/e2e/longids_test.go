package e2e

import (
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/chainvol/chainvol/pkg/driver"
)

// TestLongChainNames: a PVC whose NAMESPACE/NAME is as long as Kubernetes
// allows still gets a backup snapshot id within CSI's 128 bytes (the chain
// hashed), that id restores the exact bytes, ListSnapshots shows it with its
// source, and DeleteSnapshot of it removes the backup.
func TestLongChainNames(t *testing.T) {
	n := startDriver(t, "node-a", func(o *driver.Options) { o.BackupTargets = []string{"long-target-name=file://" + t.TempDir()} })
	ns, name := strings.Repeat("n", 63), "data-"+strings.Repeat("p", 31)
	const size = 64 * mib
	vol := createVolume(t, n.Ctrl, "long", size, blockCap(), map[string]string{
		"csi.storage.k8s.io/pvc/namespace": ns, "csi.storage.k8s.io/pvc/name": name})
	p := stagePublish(t, n.Node, vol.GetVolumeId(), blockCap())
	writeDevice(t, p.Path, 11, []int64{0, 9 * mib}, int(mib))
	want := hashDevice(t, p.Path)
	unpublishUnstage(t, p)

	id := backup(t, n.Ctrl, vol.GetVolumeId(), "long-b1", "")
	if len(id) > 128 || !strings.Contains(id, ":~") {
		t.Fatalf("backup id %q (%d bytes): want a hashed chain within 128 bytes", id, len(id))
	}
	list, err := n.Ctrl.ListSnapshots(rpcCtx(t), &csi.ListSnapshotsRequest{SnapshotId: id})
	if err != nil || len(list.GetEntries()) != 1 || list.GetEntries()[0].GetSnapshot().GetSourceVolumeId() != vol.GetVolumeId() {
		t.Fatalf("ListSnapshots(%s) = %v, %v", id, list.GetEntries(), err)
	}
	v := restore(t, n.Ctrl, restoreReq("long-copy", id, size, blockCap()))
	rp := stagePublish(t, n.Node, v.GetVolumeId(), blockCap())
	if got := hashDevice(t, rp.Path); got != want {
		t.Fatalf("restored sha256 %x, want %x", got, want)
	}
	unpublishUnstage(t, rp)
	if _, err := n.Ctrl.DeleteSnapshot(rpcCtx(t), &csi.DeleteSnapshotRequest{SnapshotId: id}); err != nil {
		t.Fatalf("DeleteSnapshot %s: %v", id, err)
	}
	_, err = createRestored(t, n.Ctrl, restoreReq("long-gone", id, size, blockCap()), retryFor)
	wantCode(t, "restore of a deleted backup", err, codes.NotFound)
}
