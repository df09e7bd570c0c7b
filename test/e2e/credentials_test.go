package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/chainvol/chainvol/pkg/driver"
)

// TestCredentialsFileRotation: the driver reads -backup-credentials-file
// again when kubelet atomically replaces it (a Secret volume's "..data"
// symlink swap): a backup refused with the wrong key (PermissionDenied)
// succeeds after the file is rotated to the right key, without a restart
// (issue 14, item 9).
func TestCredentialsFileRotation(t *testing.T) {
	s3 := startS3(t)
	dir := t.TempDir()
	publish := func(version, secretKey string) {
		t.Helper()
		if err := os.Mkdir(filepath.Join(dir, version), 0o700); err != nil {
			t.Fatal(err)
		}
		data := "accessKeyID=" + s3.srv.AccessKey + "\nsecretAccessKey=" + secretKey + "\n"
		if err := os.WriteFile(filepath.Join(dir, version, "credentials"), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(version, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	publish("..v1", strings.Repeat("x", len(s3.srv.SecretKey)))
	creds := filepath.Join(dir, "credentials")
	if err := os.Symlink("..data/credentials", creds); err != nil {
		t.Fatal(err)
	}
	n := startDriver(t, "node-a", func(o *driver.Options) {
		o.BackupTargets = []string{offsite + "=" + s3.url("")}
		o.BackupCredentialsFile = creds
	})
	vol := createVolume(t, n.Ctrl, "rotate", 64*mib, blockCap(), nil)
	req := &csi.CreateSnapshotRequest{Name: "rotate-b1", SourceVolumeId: vol.GetVolumeId(), Parameters: backupParams("")}
	_, err := n.Ctrl.CreateSnapshot(rpcCtx(t), req)
	wantCode(t, "backup with a wrong key in the credentials file", err, codes.PermissionDenied, "denied")

	publish("..v2", s3.srv.SecretKey)
	if id := backupReq(t, n.Ctrl, req); !isBackupID(id) {
		t.Fatalf("backup after the key was rotated: snapshot id %q", id)
	}
}
