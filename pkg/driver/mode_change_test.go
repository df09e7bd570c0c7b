package driver

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// TestModeChangeStaleFSType (issue 28): a Block volume cloned from an ext4
// snapshot records ext4, but its block user may overwrite every byte. A
// snapshot of it then holds no filesystem: a clone of it with mount
// access is refused (InvalidArgument), never admitted and formatted by
// NodeStageVolume over the block user's bytes; the filesystem is read
// from the bytes, not from the source's record; so for a backup of it.
func TestModeChangeStaleFSType(t *testing.T) {
	e := startMetaEnv(t, nil, "")
	node := csi.NewNodeClient(e.conn)
	const size = 64 << 20
	resp, err := e.ctl.CreateVolume(e.ctx, &csi.CreateVolumeRequest{Name: "pvc-fs", CapacityRange: &csi.CapacityRange{RequiredBytes: size},
		VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4", snw)}})
	mustOK(t, err)
	vol := resp.GetVolume().GetVolumeId()
	staging := filepath.Join(t.TempDir(), "staging")
	_, err = node.NodeStageVolume(e.ctx, &csi.NodeStageVolumeRequest{VolumeId: vol, StagingTargetPath: staging, VolumeCapability: mountCap("ext4", snw)})
	mustOK(t, err)
	_, err = node.NodeUnstageVolume(e.ctx, &csi.NodeUnstageVolumeRequest{VolumeId: vol, StagingTargetPath: staging})
	mustOK(t, err)
	s1 := e.snapshot("fs-1", vol, false)
	fromSnap := func(id string) *csi.VolumeContentSource {
		return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: id}}}
	}
	blk, err := e.ctl.CreateVolume(e.ctx, &csi.CreateVolumeRequest{Name: "pvc-blk", CapacityRange: &csi.CapacityRange{RequiredBytes: size},
		VolumeCapabilities: []*csi.VolumeCapability{blockCap(snw)}, VolumeContentSource: fromSnap(s1)})
	mustOK(t, err)
	b := blk.GetVolume().GetVolumeId()
	// The block user writes raw data over the whole device (no filesystem).
	raw := make([]byte, size)
	for i := range raw {
		raw[i] = byte(i%251) | 1
	}
	path, err := e.pool.DataPath(b)
	mustOK(t, err)
	mustOK(t, os.WriteFile(path, raw, 0o600))
	s2 := e.snapshot("blk-1", b, false)
	_, err = e.ctl.CreateVolume(e.ctx, &csi.CreateVolumeRequest{Name: "pvc-again", CapacityRange: &csi.CapacityRange{RequiredBytes: size},
		VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4", snw)}, VolumeContentSource: fromSnap(s2)})
	wantCode(t, err, codes.InvalidArgument, "no filesystem")
	// So is a backup of it: its manifest says what the bytes hold.
	bk := e.snapshot("blk-backup", b, true)
	_, err = e.ctl.CreateVolume(e.ctx, &csi.CreateVolumeRequest{Name: "pvc-again-backup", CapacityRange: &csi.CapacityRange{RequiredBytes: size},
		VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4", snw)}, VolumeContentSource: fromSnap(bk)})
	wantCode(t, err, codes.InvalidArgument, "no filesystem")
	// A snapshot of a Block volume that does hold one mounts (read from the bytes).
	blk2, err := e.ctl.CreateVolume(e.ctx, &csi.CreateVolumeRequest{Name: "pvc-blk2", CapacityRange: &csi.CapacityRange{RequiredBytes: size},
		VolumeCapabilities: []*csi.VolumeCapability{blockCap(snw)}, VolumeContentSource: fromSnap(s1)})
	mustOK(t, err)
	s3 := e.snapshot("blk2-1", blk2.GetVolume().GetVolumeId(), false)
	m, err := e.ctl.CreateVolume(e.ctx, &csi.CreateVolumeRequest{Name: "pvc-mount", CapacityRange: &csi.CapacityRange{RequiredBytes: size},
		VolumeCapabilities: []*csi.VolumeCapability{mountCap("", snw)}, VolumeContentSource: fromSnap(s3)})
	mustOK(t, err)
	if got := m.GetVolume().GetVolumeContext()["fsType"]; got != "ext4" {
		t.Errorf("mount volume from a Block snapshot holding ext4 records fsType %q, want ext4", got)
	}
}
