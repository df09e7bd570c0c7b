package e2e

import (
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/pkg/backend"
)

// TestRestoreRefusals: requests that cannot be served are refused before
// anything is allocated, with the code the CSI spec asks for: an XFS backup
// asked for as ext4 (InvalidArgument naming both), a backup that does not
// exist (NotFound), a capacity below the backup's size (OutOfRange), a
// Block backup holding no filesystem asked for with mount access
// (InvalidArgument).
func TestRestoreRefusals(t *testing.T) {
	s3 := startS3(t)
	n := startDriver(t, "node-a", s3.opts(s3.url("")))
	const size = 320 * mib
	vol := createVolume(t, n.Ctrl, "xfs-src", size, mountCap("xfs"), nil)
	p := stagePublish(t, n.Node, vol.GetVolumeId(), mountCap("xfs"))
	writeTree(t, p.Path, 4, 4*mib)
	unpublishUnstage(t, p)
	id := backup(t, n.Ctrl, vol.GetVolumeId(), "xfs-src-b1", "")

	_, err := n.Ctrl.CreateVolume(rpcCtx(t), restoreReq("as-ext4", id, size, mountCap("ext4")))
	wantCode(t, "XFS backup restored as ext4", err, codes.InvalidArgument, "xfs", "ext4")

	_, err = n.Ctrl.CreateVolume(rpcCtx(t), &csi.CreateVolumeRequest{Name: "missing",
		VolumeCapabilities: []*csi.VolumeCapability{mountCap("")},
		Parameters:         map[string]string{"fromBackup": "offsite:no/such@latest"}})
	wantCode(t, "restore of a missing backup", err, codes.NotFound, "no/such")

	_, err = n.Ctrl.CreateVolume(rpcCtx(t), restoreReq("too-small", id, size/2, mountCap("")))
	wantCode(t, "restore into a capacity smaller than the backup", err, codes.OutOfRange)

	// A Filesystem backup restores as Block (issue 28: test/cli's
	// TestSnapshotMetadataApply); a Block backup holding no filesystem
	// does not mount.
	raw := createVolume(t, n.Ctrl, "raw-src", 64*mib, blockCap(), nil)
	rp := stagePublish(t, n.Node, raw.GetVolumeId(), blockCap())
	writeDevice(t, rp.Path, 28, []int64{0, 32 * mib}, int(mib))
	unpublishUnstage(t, rp)
	rawID := backup(t, n.Ctrl, raw.GetVolumeId(), "raw-src-b1", "")
	_, err = n.Ctrl.CreateVolume(rpcCtx(t), restoreReq("as-mount", rawID, 64*mib, mountCap("")))
	wantCode(t, "block backup without a filesystem restored with mount access", err, codes.InvalidArgument, "block access")

	ids := []string{vol.GetVolumeId(), raw.GetVolumeId()}
	slices.Sort(ids)
	onlyVolumes(t, n, ids...)
}

// onlyVolumes fails the test unless ListVolumes lists exactly ids and the
// pool holds no other volume lvol (nothing left by a refused or failed restore).
func onlyVolumes(t *testing.T, n *csitest.Node, ids ...string) {
	t.Helper()
	resp, err := n.Ctrl.ListVolumes(rpcCtx(t), &csi.ListVolumesRequest{})
	if err != nil {
		t.Fatalf("ListVolumes: %v", err)
	}
	var got []string
	for _, e := range resp.GetEntries() {
		got = append(got, e.GetVolume().GetVolumeId())
	}
	lvols, err := n.Pool.List(rpcCtx(t), backend.KindVolume)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ids) || len(lvols) != len(ids) {
		t.Fatalf("ListVolumes has %v and the pool %d volume lvols, want only %v", got, len(lvols), ids)
	}
	for i, id := range ids {
		if got[i] != id {
			t.Fatalf("ListVolumes has %v, want %v", got, ids)
		}
	}
}
