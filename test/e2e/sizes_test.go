package e2e

import (
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// TestLimitBelowSource: CreateVolume whose capacity_range.limit_bytes is
// smaller than its source answers OutOfRange (CSI spec "CreateVolume":
// "Unsupported capacity_range", e.g. smaller than the source snapshot),
// for a backup (it answered InvalidArgument: issue 14, item 6), a local
// snapshot and a volume clone, and allocates nothing.
func TestLimitBelowSource(t *testing.T) {
	n := startDriver(t, "node-a", nil)
	const size, limit = 2 << 30, 1 << 30
	vol := createVolume(t, n.Ctrl, "big", size, blockCap(), nil)
	writeVolume(t, n, vol.GetVolumeId(), 7)
	bid := backup(t, n.Ctrl, vol.GetVolumeId(), "big-b1", "")
	snap, err := n.Ctrl.CreateSnapshot(rpcCtx(t), &csi.CreateSnapshotRequest{Name: "big-s1", SourceVolumeId: vol.GetVolumeId()})
	if err != nil {
		t.Fatalf("local snapshot: %v", err)
	}
	for _, tc := range []struct {
		what string
		src  *csi.VolumeContentSource
		rng  *csi.CapacityRange
	}{
		{"backup", snapshotSource(bid), &csi.CapacityRange{LimitBytes: limit}},
		{"backup", snapshotSource(bid), &csi.CapacityRange{RequiredBytes: limit / 2, LimitBytes: limit}},
		{"local snapshot", snapshotSource(snap.GetSnapshot().GetSnapshotId()), &csi.CapacityRange{LimitBytes: limit}},
		{"volume", volumeSource(vol.GetVolumeId()), &csi.CapacityRange{LimitBytes: limit}},
	} {
		_, err := n.Ctrl.CreateVolume(rpcCtx(t), &csi.CreateVolumeRequest{Name: "small", CapacityRange: tc.rng,
			VolumeCapabilities: []*csi.VolumeCapability{blockCap()}, VolumeContentSource: tc.src})
		wantCode(t, "CreateVolume from a 2 GiB "+tc.what+" with limit_bytes 1 GiB", err, codes.OutOfRange, "2147483648")
	}
	onlyVolumes(t, n, vol.GetVolumeId())
}
