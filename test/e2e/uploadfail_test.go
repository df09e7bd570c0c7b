package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestFailedUpload: one snapshot name keeps one snapshot id forever (CSI
// spec "CreateSnapshot"; issue 14, item 5). While the target refuses the
// upload's writes, a CreateSnapshot reports the failure with its cause as a
// retryable code (Aborted: the upload is retried under the same id); once
// the target heals, the same request becomes ready with the same id, and
// that backup restores the volume's bytes.
func TestFailedUpload(t *testing.T) {
	n, proxy := proxiedDriver(t)
	const size = 64 * mib
	vol := createVolume(t, n.Ctrl, "upfail", size, blockCap(), nil)
	want := writeVolume(t, n, vol.GetVolumeId(), 5)

	proxy.denyWrites.Store(true)
	req := &csi.CreateSnapshotRequest{Name: "upfail-b1", SourceVolumeId: vol.GetVolumeId(), Parameters: backupParams("")}
	first, err := n.Ctrl.CreateSnapshot(rpcCtx(t), req)
	if err != nil {
		t.Fatalf("first CreateSnapshot: %v", err)
	}
	id := first.GetSnapshot().GetSnapshotId()
	if !isBackupID(id) || first.GetSnapshot().GetReadyToUse() {
		t.Fatalf("first CreateSnapshot: %v, want a backup not ready yet", first.GetSnapshot())
	}
	for deadline := time.Now().Add(retryFor); ; time.Sleep(200 * time.Millisecond) {
		var resp *csi.CreateSnapshotResponse
		if resp, err = n.Ctrl.CreateSnapshot(rpcCtx(t), req); err != nil {
			break
		}
		if s := resp.GetSnapshot(); s.GetReadyToUse() || s.GetSnapshotId() != id {
			t.Fatalf("CreateSnapshot while writes are refused: %v, want %s not ready", s, id)
		}
		if time.Now().After(deadline) {
			t.Fatal("no CreateSnapshot reported the failed upload")
		}
	}
	wantCode(t, "CreateSnapshot after a failed upload", err, codes.Aborted, "backup upload", id, "access denied", "retrying")

	proxy.denyWrites.Store(false)
	for deadline := time.Now().Add(retryFor); ; time.Sleep(200 * time.Millisecond) {
		resp, err := n.Ctrl.CreateSnapshot(rpcCtx(t), req)
		if status.Code(err) == codes.Aborted && strings.Contains(status.Convert(err).Message(), "retrying") {
			continue // a retry that started before the target healed
		} else if err != nil {
			t.Fatalf("CreateSnapshot after the target healed: %v", err)
		}
		if got := resp.GetSnapshot().GetSnapshotId(); got != id {
			t.Fatalf("CreateSnapshot %s answered id %s, first %s: one name must keep one id", req.GetName(), got, id)
		}
		if resp.GetSnapshot().GetReadyToUse() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("backup %s not ready %v after the target healed", id, retryFor)
		}
	}
	v := restore(t, n.Ctrl, restoreReq("upfail-copy", id, size, blockCap()))
	rp := stagePublish(t, n.Node, v.GetVolumeId(), blockCap())
	if got := hashDevice(t, rp.Path); got != want {
		t.Fatalf("restored sha256 %x, want %x", got, want)
	}
	unpublishUnstage(t, rp)
}

// isBackupID reports whether a snapshot id names a backup.
func isBackupID(id string) bool { return len(id) > 7 && id[:7] == "backup:" }
