package e2e

import (
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// TestFSTypeSettledAtCreate: one fsType rule at CreateVolume for every
// content source (issue 14, item 8). A clone, a local snapshot's volume
// and a restore asked as ext4 of an XFS source are refused with
// InvalidArgument naming both types and the StorageClass key to drop (a
// clone was created and refused only at NodeStageVolume); asked with no
// fsType, each keeps XFS. A source created without an fsType, formatted
// with the default at staging, is judged by what it holds.
func TestFSTypeSettledAtCreate(t *testing.T) {
	n := startDriver(t, "node-a", nil)
	const size = 320 * mib
	vol := createVolume(t, n.Ctrl, "xfs-src", size, mountCap("xfs"), nil)
	p := stagePublish(t, n.Node, vol.GetVolumeId(), mountCap("xfs"))
	writeTree(t, p.Path, 9, 4*mib)
	unpublishUnstage(t, p)
	snap, err := n.Ctrl.CreateSnapshot(rpcCtx(t), &csi.CreateSnapshotRequest{Name: "xfs-s1", SourceVolumeId: vol.GetVolumeId()})
	if err != nil {
		t.Fatalf("local snapshot: %v", err)
	}
	bid := backup(t, n.Ctrl, vol.GetVolumeId(), "xfs-b1", "")

	plain := createVolume(t, n.Ctrl, "nofs-src", size, mountCap(""), nil)
	pp := stagePublish(t, n.Node, plain.GetVolumeId(), mountCap(""))
	unpublishUnstage(t, pp)

	for i, tc := range []struct {
		what, srcFS, otherFS string
		src                  *csi.VolumeContentSource
	}{
		{"clone", "xfs", "ext4", volumeSource(vol.GetVolumeId())},
		{"local snapshot", "xfs", "ext4", snapshotSource(snap.GetSnapshot().GetSnapshotId())},
		{"backup", "xfs", "ext4", snapshotSource(bid)},
		{"clone of a volume formatted with the default", "ext4", "xfs", volumeSource(plain.GetVolumeId())},
	} {
		req := &csi.CreateVolumeRequest{Name: "fs-" + itoa(i), CapacityRange: &csi.CapacityRange{RequiredBytes: size},
			VolumeCapabilities: []*csi.VolumeCapability{mountCap(tc.otherFS)}, VolumeContentSource: tc.src}
		_, err := n.Ctrl.CreateVolume(rpcCtx(t), req)
		wantCode(t, tc.what+" of "+tc.srcFS+" asked as "+tc.otherFS, err, codes.InvalidArgument,
			tc.srcFS, tc.otherFS, "csi.storage.k8s.io/fstype")

		req.VolumeCapabilities = []*csi.VolumeCapability{mountCap("")}
		v, err := createRestored(t, n.Ctrl, req, rpcTimeout)
		if err != nil {
			t.Fatalf("%s with no fsType: %v", tc.what, err)
		}
		if got := v.GetVolumeContext()["fsType"]; got != tc.srcFS {
			t.Errorf("%s with no fsType: volume_context fsType %q, want the source's %q", tc.what, got, tc.srcFS)
		}
	}
}

func volumeSource(id string) *csi.VolumeContentSource {
	return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: id}}}
}

func snapshotSource(id string) *csi.VolumeContentSource {
	return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: id}}}
}
