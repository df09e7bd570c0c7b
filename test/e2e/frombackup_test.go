package e2e

import (
	"testing"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// TestFromBackupTemplate: a volume made for PVC shop/data-db-0 is backed
// up into chain "shop/data-db-0"; another volume whose StorageClass says
// fromBackup "offsite:${pvc.namespace}/${pvc.name}@latest" is restored from
// it when the request carries the same PVC metadata, and is InvalidArgument
// without PVC metadata.
func TestFromBackupTemplate(t *testing.T) {
	n, vol, p := startPVCVolume(t)
	writeTree(t, p.Path, 3, 16*mib)
	want := hashTree(t, p.Path)
	id := backup(t, n.Ctrl, vol.GetVolumeId(), "snap-db-0", "")
	unpublishUnstage(t, p)
	if _, chain, _ := splitBackupID(t, id); chain != "shop/data-db-0" {
		t.Fatalf("backup %s: chain %q, want the PVC's shop/data-db-0", id, chain)
	}

	params := pvcParams("shop", "data-db-0")
	params["fromBackup"] = "offsite:${pvc.namespace}/${pvc.name}@latest"
	req := &csi.CreateVolumeRequest{Name: "pvc-0002", VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4")},
		CapacityRange: &csi.CapacityRange{RequiredBytes: volSize}, Parameters: params}
	v := restore(t, n.Ctrl, req)
	if got, want := v.GetVolumeContext()["restoredFrom"], id[len("backup:"):]; got != want {
		t.Errorf("volume_context restoredFrom %q, want %q (latest resolved)", got, want)
	}
	if got := v.GetVolumeContext()["fsType"]; got != "ext4" {
		t.Errorf("volume_context fsType %q, want ext4", got)
	}
	rp := stagePublish(t, n.Node, v.GetVolumeId(), mountCap("ext4"))
	sameTree(t, "restore through fromBackup", rp.Path, want)
	unpublishUnstage(t, rp)

	_, err := n.Ctrl.CreateVolume(rpcCtx(t), &csi.CreateVolumeRequest{Name: "pvc-0003",
		VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4")},
		Parameters:         map[string]string{"fromBackup": params["fromBackup"]}})
	wantCode(t, "fromBackup template without PVC metadata", err, codes.InvalidArgument, "${pvc.namespace}", "extra-create-metadata")
}

// startPVCVolume starts S3 and a driver on node-a, creates volume pvc-0001
// (volSize bytes, ext4) with the metadata of PVC shop/data-db-0 (so its
// backups go to chain shop/data-db-0) and stages and publishes it.
func startPVCVolume(t *testing.T) (*csitest.Node, *csi.Volume, *published) {
	t.Helper()
	s3 := startS3(t)
	n := startDriver(t, "node-a", s3.opts(s3.url("")))
	vol := createVolume(t, n.Ctrl, "pvc-0001", volSize, mountCap("ext4"), pvcParams("shop", "data-db-0"))
	return n, vol, stagePublish(t, n.Node, vol.GetVolumeId(), mountCap("ext4"))
}
