package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/driver"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// offsite is the name of the S3 backup target the tests configure.
const offsite = "offsite"

// s3Target is a running versitygw with a credentials file, as a DaemonSet
// would mount it.
type s3Target struct {
	srv   testutil.S3Server
	creds string
}

// startS3 starts versitygw and writes its credentials file.
func startS3(t *testing.T) s3Target {
	t.Helper()
	return s3TargetOf(t, testutil.StartS3(t))
}

// s3TargetOf writes the credentials file of a started srv.
func s3TargetOf(t *testing.T, srv testutil.S3Server) s3Target {
	t.Helper()
	creds := filepath.Join(t.TempDir(), "creds")
	data := "accessKeyID=" + srv.AccessKey + "\nsecretAccessKey=" + srv.SecretKey + "\n"
	if err := os.WriteFile(creds, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return s3Target{srv: srv, creds: creds}
}

// url is the target URL of the tests' key prefix, through endpoint when
// given (a proxy), else straight to the server.
func (s s3Target) url(endpoint string) string {
	if endpoint == "" {
		return s.srv.URL("e2e")
	}
	s.srv.Endpoint = endpoint
	return s.srv.URL("e2e")
}

// opts configures a driver with the target as "offsite" (-backup-target
// offsite=URL -backup-credentials-file FILE).
func (s s3Target) opts(url string) func(*driver.Options) {
	return func(o *driver.Options) {
		o.BackupTargets = []string{offsite + "=" + url}
		o.BackupCredentialsFile = s.creds
	}
}

// newPool makes a reflink XFS filesystem on a loop device and returns a
// pool directory on it.
func newPool(t *testing.T) string {
	t.Helper()
	return filepath.Join(testutil.LoopFS(t, "xfs", 6<<30), "pool")
}

// startDriver starts a driver for nodeID on a fresh pool.
func startDriver(t *testing.T, nodeID string, extra func(*driver.Options)) *csitest.Node {
	t.Helper()
	testutil.RequireRoot(t)
	return csitest.Start(t, nodeID, newPool(t), extra)
}

// openRepo opens a backup target the way the driver does, to read the
// manifests it wrote.
func openRepo(t *testing.T, url, credsFile string) *s3chain.Repo {
	t.Helper()
	var sec target.Secrets
	if credsFile != "" {
		var err error
		if sec, err = target.ReadSecretsFile(credsFile); err != nil {
			t.Fatal(err)
		}
	}
	set, err := target.NewSet([]string{"t=" + url}, "", sec)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := set.Open(context.Background(), "t", nil)
	if err != nil {
		t.Fatalf("open backup target %s: %v", url, err)
	}
	return repo
}

// fileTargetURL is the URL of a driver's embedded default target.
func fileTargetURL(n *csitest.Node) string {
	return "file://" + filepath.Join(n.Opts.StateDir, "backups")
}
