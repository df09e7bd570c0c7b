package e2e

import (
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// TestTargetRefusesConnections: while the S3 target refuses connections,
// every RPC that needs it answers Unavailable, a code the CO retries, not
// Internal; once it is back, the same DeleteSnapshot succeeds (issue 14,
// item 4).
func TestTargetRefusesConnections(t *testing.T) {
	n, proxy := proxiedDriver(t)
	const size = 64 * mib
	vol := createVolume(t, n.Ctrl, "unavail", size, blockCap(), nil)
	writeVolume(t, n, vol.GetVolumeId(), 3)
	id := backup(t, n.Ctrl, vol.GetVolumeId(), "unavail-b1", "")

	proxy.down()
	_, err := n.Ctrl.DeleteSnapshot(rpcCtx(t), &csi.DeleteSnapshotRequest{SnapshotId: id})
	wantCode(t, "DeleteSnapshot while the target refuses connections", err, codes.Unavailable, "unavailable")
	_, err = n.Ctrl.CreateVolume(rpcCtx(t), restoreReq("unavail-copy", id, size, blockCap()))
	wantCode(t, "restore while the target refuses connections", err, codes.Unavailable, "unavailable")
	_, err = n.Ctrl.CreateSnapshot(rpcCtx(t), &csi.CreateSnapshotRequest{Name: "unavail-b2", SourceVolumeId: vol.GetVolumeId(), Parameters: backupParams("")})
	wantCode(t, "backup while the target refuses connections", err, codes.Unavailable, "unavailable")

	proxy.up()
	if _, err := n.Ctrl.DeleteSnapshot(rpcCtx(t), &csi.DeleteSnapshotRequest{SnapshotId: id}); err != nil {
		t.Fatalf("DeleteSnapshot once the target is back: %v", err)
	}
	_, err = n.Ctrl.CreateVolume(rpcCtx(t), restoreReq("unavail-copy", id, size, blockCap()))
	wantCode(t, "restore of the deleted backup", err, codes.NotFound)
}
