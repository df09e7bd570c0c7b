package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// TestFailedUpload: an upload that cannot store its blocks is reported as
// the error of a later CreateSnapshot call, with its cause; once the target
// is repaired, the same request starts afresh and becomes ready.
func TestFailedUpload(t *testing.T) {
	n := startDriver(t, "node-a", nil)
	vol := createVolume(t, n.Ctrl, "upfail", 64*mib, blockCap(), nil)
	p := stagePublish(t, n.Node, vol.GetVolumeId(), blockCap())
	writeDevice(t, p.Path, 5, []int64{0}, int(mib))
	unpublishUnstage(t, p)

	// A regular file where the chain's block directory must go makes every
	// block upload fail (ENOTDIR), as a broken target would.
	blocker := filepath.Join(n.Opts.StateDir, "backups", "blocks", "upfail")
	if err := os.MkdirAll(filepath.Dir(blocker), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	req := &csi.CreateSnapshotRequest{Name: "upfail-b1", SourceVolumeId: vol.GetVolumeId(), Parameters: backupParams("")}
	var err error
	for deadline := time.Now().Add(retryFor); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var resp *csi.CreateSnapshotResponse
		if resp, err = n.Ctrl.CreateSnapshot(rpcCtx(t), req); err != nil {
			break
		}
		if resp.GetSnapshot().GetReadyToUse() {
			t.Fatal("a backup whose blocks cannot be stored became ready")
		}
	}
	wantCode(t, "CreateSnapshot after a failed upload", err, codes.Internal, "backup upload failed", "not a directory")

	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	if id := backupReq(t, n.Ctrl, req); !isBackupID(id) {
		t.Fatalf("retry after repair: snapshot id %q is not a backup's", id)
	}
}

// isBackupID reports whether a snapshot id names a backup.
func isBackupID(id string) bool { return len(id) > 7 && id[:7] == "backup:" }
