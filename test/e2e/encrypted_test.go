package e2e

import (
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// TestEncryptedBackup: an encryptionKey in the request's secrets encrypts
// the chain; a restore without it or with another key is InvalidArgument
// naming the wrong key and leaves nothing behind; the right key restores
// the exact bytes.
func TestEncryptedBackup(t *testing.T) {
	n := startDriver(t, "node-a", nil)
	key := map[string]string{"encryptionKey": strings.Repeat("5a", 32)}
	const size = 64 * mib
	vol := createVolume(t, n.Ctrl, "secret", size, blockCap(), nil)
	p := stagePublish(t, n.Node, vol.GetVolumeId(), blockCap())
	writeDevice(t, p.Path, 21, []int64{0, 33 * mib}, int(2*mib))
	want := hashDevice(t, p.Path)
	unpublishUnstage(t, p)

	id := backupReq(t, n.Ctrl, &csi.CreateSnapshotRequest{Name: "secret-b1", SourceVolumeId: vol.GetVolumeId(),
		Parameters: backupParams(""), Secrets: key})
	for what, secrets := range map[string]map[string]string{
		"no key":    nil,
		"wrong key": {"encryptionKey": strings.Repeat("a5", 32)},
	} {
		req := restoreReq("secret-"+strings.ReplaceAll(what, " ", "-"), id, size, blockCap())
		req.Secrets = secrets
		_, err := createRestored(t, n.Ctrl, req, retryFor)
		wantCode(t, "restore with "+what, err, codes.InvalidArgument, "key")
	}
	onlyVolumes(t, n, vol.GetVolumeId())

	req := restoreReq("secret-copy", id, size, blockCap())
	req.Secrets = key
	v := restore(t, n.Ctrl, req)
	rp := stagePublish(t, n.Node, v.GetVolumeId(), blockCap())
	if got := hashDevice(t, rp.Path); got != want {
		t.Fatalf("restored sha256 %x, want %x", got, want)
	}
	unpublishUnstage(t, rp)
}
