// Package sanity runs the Kubernetes CSI sanity suite (csi-test v5) against
// a real chainvol driver on a reflink XFS pool on a loop device, once for
// each access type.
package sanity

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/driver"
)

// childEnv tells a re-executed test binary which access type to run:
// Ginkgo allows one suite run per process, so each access type gets its own.
const childEnv = "CHAINVOL_SANITY_ACCESS"

// brokenTopologySpec is the csi-sanity v5.6.0 spec that fails for every
// driver whose snapshots report a topology: it compares the answer's
// csi.Topology with the node's by reflect.DeepEqual (gomega Equal), and
// the node's, marshalled into the requests, carries a filled sizeCache the
// unmarshalled answer has not. It runs with backups (they report none);
// for local snapshots TestSnapshotTopologySpec makes its check with
// proto.Equal.
const brokenTopologySpec = "should succeed when creating a snapshot with accessibility requirements"

// TestSanity runs the sanity suite for the "mount" and "block" access types,
// each in a child process, and fails if either reports a failure.
func TestSanity(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("child process")
	}
	testutil.RequireRoot(t)
	// The last two archive every snapshot to a real S3 server (versitygw),
	// so backup snapshots pass the same suite as local ones.
	for _, access := range []string{"mount", "block", "mount+s3backup", "block+s3backup"} {
		t.Run(access, func(t *testing.T) {
			args := []string{"-test.run=^TestSanityChild$", "-test.v"}
			if v := os.Getenv("SANITY_FOCUS"); v != "" {
				args = append(args, "-ginkgo.focus="+v)
			}
			if !strings.Contains(access, "s3backup") {
				args = append(args, "-ginkgo.skip="+brokenTopologySpec)
			}
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), childEnv+"="+access)
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("sanity suite for access type %s failed: %v", access, err)
			}
		})
	}
}

// TestSanityChild is the child half of TestSanity.
func TestSanityChild(t *testing.T) {
	access, backup, _ := strings.Cut(os.Getenv(childEnv), "+")
	if access == "" {
		t.Skip("run through TestSanity")
	}
	pool := testutil.LoopFS(t, "xfs", 8<<30)
	var extra func(*driver.Options)
	if backup == "s3backup" {
		extra = s3Target(t)
	}
	node := csitest.Start(t, "sanity-node", filepath.Join(pool, "pool"), extra)
	dir := t.TempDir()
	cfg := sanity.NewTestConfig()
	cfg.Address = node.Endpoint
	cfg.TargetPath = filepath.Join(dir, "target")
	cfg.StagingPath = filepath.Join(dir, "staging")
	cfg.TestVolumeAccessType = access
	cfg.TestVolumeSize = 64 << 20
	cfg.TestVolumeExpandSize = 128 << 20
	cfg.IdempotentCount = 2
	if backup != "" {
		cfg.TestSnapshotParameters = map[string]string{"backup": "true"}
	}
	sanity.Test(t, cfg)
}

// s3Target starts versitygw and points the driver's only backup target at
// it, with the credentials in a credentials file as a DaemonSet would.
func s3Target(t *testing.T) func(*driver.Options) {
	srv := testutil.StartS3(t)
	creds := filepath.Join(t.TempDir(), "creds")
	data := "accessKeyID=" + srv.AccessKey + "\nsecretAccessKey=" + srv.SecretKey + "\n"
	if err := os.WriteFile(creds, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(o *driver.Options) {
		o.BackupTargets = []string{"offsite=" + srv.URL("sanity")}
		o.BackupCredentialsFile = creds
	}
}
