package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// retryFor bounds the retries of a backup or restore that reports progress.
const retryFor = 90 * time.Second

// backupParams asks CreateSnapshot for a backup on target ("" = default).
func backupParams(target string) map[string]string {
	p := map[string]string{"backup": "true"}
	if target != "" {
		p["backupTarget"] = target
	}
	return p
}

// backup takes a backup snapshot of volID called name and calls
// CreateSnapshot again, as the external-snapshotter does, until it is
// ready; it returns the backup's snapshot id.
func backup(t *testing.T, ctrl csi.ControllerClient, volID, name, target string) string {
	t.Helper()
	return backupReq(t, ctrl, &csi.CreateSnapshotRequest{Name: name, SourceVolumeId: volID, Parameters: backupParams(target)})
}

// backupReq is backup for a whole request (with secrets, say).
func backupReq(t *testing.T, ctrl csi.ControllerClient, req *csi.CreateSnapshotRequest) string {
	t.Helper()
	deadline := time.Now().Add(retryFor)
	for {
		resp, err := ctrl.CreateSnapshot(rpcCtx(t), req)
		if err != nil {
			t.Fatalf("CreateSnapshot %s of %s: %v", req.GetName(), req.GetSourceVolumeId(), err)
		}
		s := resp.GetSnapshot()
		if s.GetSourceVolumeId() != req.GetSourceVolumeId() {
			t.Fatalf("CreateSnapshot %s: source_volume_id %q, want %q", req.GetName(), s.GetSourceVolumeId(), req.GetSourceVolumeId())
		}
		if s.GetReadyToUse() {
			return s.GetSnapshotId()
		}
		if time.Now().After(deadline) {
			t.Fatalf("backup %s (%s) not ready after %v", req.GetName(), s.GetSnapshotId(), retryFor)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// createRestored calls CreateVolume with req until it answers anything but
// Aborted (a restore in progress), within retryFor, each call with a
// deadline of callTimeout. It returns the final answer.
func createRestored(t *testing.T, ctrl csi.ControllerClient, req *csi.CreateVolumeRequest, callTimeout time.Duration) (*csi.Volume, error) {
	t.Helper()
	deadline := time.Now().Add(retryFor)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		resp, err := ctrl.CreateVolume(ctx, req)
		cancel()
		if status.Code(err) != codes.Aborted {
			return resp.GetVolume(), err
		}
		if time.Now().After(deadline) {
			t.Fatalf("CreateVolume %s still Aborted after %v: %v", req.GetName(), retryFor, err)
		}
		t.Logf("CreateVolume %s: %v", req.GetName(), err)
		time.Sleep(200 * time.Millisecond)
	}
}

// restoreReq asks for a volume from a backup snapshot.
func restoreReq(name, snapID string, size int64, c *csi.VolumeCapability) *csi.CreateVolumeRequest {
	return &csi.CreateVolumeRequest{
		Name: name, CapacityRange: &csi.CapacityRange{RequiredBytes: size},
		VolumeCapabilities: []*csi.VolumeCapability{c},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snapID}}},
	}
}

// restore restores a volume and fails the test unless it succeeds.
func restore(t *testing.T, ctrl csi.ControllerClient, req *csi.CreateVolumeRequest) *csi.Volume {
	t.Helper()
	v, err := createRestored(t, ctrl, req, 10*time.Second)
	if err != nil {
		t.Fatalf("restore CreateVolume %s: %v", req.GetName(), err)
	}
	return v
}

// wantCode fails the test unless err is a status with code want whose
// message contains every one of words.
func wantCode(t *testing.T, what string, err error, want codes.Code, words ...string) {
	t.Helper()
	if status.Code(err) != want {
		t.Fatalf("%s: got %v, want code %v", what, err, want)
	}
	for _, w := range words {
		if !containsFold(status.Convert(err).Message(), w) {
			t.Errorf("%s: message %q does not mention %q", what, status.Convert(err).Message(), w)
		}
	}
}
