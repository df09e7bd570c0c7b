package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/chainvol/chainvol/internal/testutil"
)

// runBoth runs execute with args and returns its exit code, stdout and
// stderr.
func runBoth(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var outs [2]*os.File
	var done [2]chan []byte
	olds := [2]*os.File{os.Stdout, os.Stderr}
	for i := range outs {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		outs[i], done[i] = w, make(chan []byte)
		go func() { b, _ := io.ReadAll(r); done[i] <- b }()
	}
	os.Stdout, os.Stderr = outs[0], outs[1]
	code := execute(context.Background(), args)
	os.Stdout, os.Stderr = olds[0], olds[1]
	outs[0].Close()
	outs[1].Close()
	return code, string(<-done[0]), string(<-done[1])
}

// forgetSetup makes n backups b1..bn of one image in chain lab/disk of the
// default (file) target and returns the global flags.
func forgetSetup(t *testing.T, n int, target ...string) []string {
	t.Helper()
	dir := t.TempDir()
	img := filepath.Join(dir, "disk.img")
	if err := os.WriteFile(img, bytes.Repeat([]byte("forget!!"), 1<<15), 0o600); err != nil {
		t.Fatal(err)
	}
	g := append([]string{"--state-dir", filepath.Join(dir, "state")}, target...)
	if err := os.MkdirAll(filepath.Join(dir, "state", "backups"), 0o700); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if code, _, stderr := runBoth(t, append(g, "backup", "create", "--from", img, "--chain", "lab/disk",
			"--id", fmt.Sprintf("b%d", i), "--block-size", "65536")...); code != 0 {
			t.Fatalf("backup create b%d: exit %d; %s", i, code, stderr)
		}
	}
	return g
}

// TestBackupForget: --dry-run names what would go and the rule that keeps
// each kept backup, and removes nothing; the real run removes exactly the
// backups the policy lets go; a policy-less or malformed call is a usage
// error (exit 2).
func TestBackupForget(t *testing.T) {
	g := forgetSetup(t, 4)
	code, out, stderr := runBoth(t, append(g, "backup", "forget", "lab/disk", "--keep-last", "2", "--dry-run")...)
	if code != 0 {
		t.Fatalf("dry run: exit %d; %s", code, stderr)
	}
	for _, want := range []string{"b4 ", "keep ", "last 1", "last 2", "would forget", "dry run (keep-last 2): nothing removed"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	code, out, stderr = runBoth(t, append(g, "-o", "json", "backup", "forget", "lab/disk", "--keep-last", "2")...)
	if code != 0 {
		t.Fatalf("forget: exit %d; %s", code, stderr)
	}
	var res forgetResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	actions := map[string]string{}
	for _, b := range res.Backups {
		actions[b.ID] = b.Action
	}
	if fmt.Sprint(actions) != "map[b1:forget b2:forget b3:keep b4:keep]" || res.DryRun {
		t.Fatalf("actions %v", actions)
	}
	code, out, _ = runBoth(t, append(g, "backup", "ls", "lab/disk")...)
	if code != 0 || strings.Contains(out, "\nb1 ") || strings.Contains(out, "\nb2 ") || !strings.Contains(out, "\nb3 ") {
		t.Fatalf("after forget: exit %d\n%s", code, out)
	}
	for _, bad := range [][]string{{}, {"--keep-within", "soon"}, {"--keep-daily", "-3"}} {
		if code, _, _ := runBoth(t, append(append(g, "backup", "forget", "lab/disk"), bad...)...); code != exitUsage {
			t.Errorf("forget %v: exit %d, want %d", bad, code, exitUsage)
		}
	}
}

// TestBackupRmLocked: on an Object Lock target (versitygw), "backup rm"
// of a backup before its retain-until date fails naming the date with a
// hint (--dry-run says it would), and "backup forget" lists it as locked and goes on (exit 0).
func TestBackupRmLocked(t *testing.T) {
	srv := testutil.StartS3ObjectLock(t)
	t.Setenv(envAccessKeyID, srv.AccessKey)
	t.Setenv(envSecretAccessKey, srv.SecretKey)
	g := forgetSetup(t, 2, "--target", "locked="+srv.URL("p")+"&lock=compliance&retain=1h")
	code, out, stderr := runBoth(t, append(g, "backup", "rm", "locked:lab/disk@b1", "--dry-run")...)
	if code != 0 || !strings.Contains(out, "under S3 Object Lock retention until 20") {
		t.Fatalf("rm --dry-run of a locked backup: exit %d\n%s%s", code, out, stderr)
	}
	code, _, stderr = runBoth(t, append(g, "backup", "rm", "locked:lab/disk@b1")...)
	if code != exitFailure || !strings.Contains(stderr, "locked (COMPLIANCE) until 20") || !strings.Contains(stderr, "hint: the backup is under S3 Object Lock") {
		t.Fatalf("rm of a locked backup: exit %d; %s", code, stderr)
	}
	code, out, stderr = runBoth(t, append(g, "backup", "forget", "locked:lab/disk", "--keep-last", "1")...)
	if code != 0 || !strings.Contains(out, "locked") || !strings.Contains(out, "Object Lock until 20") {
		t.Fatalf("forget on a locked chain: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = runBoth(t, append(g, "target", "check", "locked")...)
	if code != 0 || !strings.Contains(out, "bucket Object Lock enabled, no default retention; target retention: COMPLIANCE for 1h0m0s") {
		t.Fatalf("target check: exit %d\n%s%s", code, out, stderr)
	}
}

// TestTargetCheckHiddenObjects: on a versioned Object Lock bucket, after a
// plain DELETE (no version id) of every object of a lock= target, backup
// ls still lists the backups (read through the delete markers) and target
// check counts and names the hidden objects.
func TestTargetCheckHiddenObjects(t *testing.T) {
	srv := testutil.StartS3ObjectLockVersioned(t)
	t.Setenv(envAccessKeyID, srv.AccessKey)
	t.Setenv(envSecretAccessKey, srv.SecretKey)
	g := forgetSetup(t, 2, "--target", "locked="+srv.URL("p")+"&lock=compliance&retain=1h")
	code, out, stderr := runBoth(t, append(g, "target", "check", "locked")...)
	if code != 0 || strings.Contains(out, "hidden by delete markers") {
		t.Fatalf("target check before the deletes: exit %d\n%s%s", code, out, stderr)
	}
	raw, err := minio.New(srv.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(srv.AccessKey, srv.SecretKey, ""),
		Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var keys []string
	for oi := range raw.ListObjectsIter(ctx, srv.Bucket, minio.ListObjectsOptions{Prefix: "p/", Recursive: true}) {
		keys = append(keys, oi.Key)
	}
	for _, k := range keys {
		if err := raw.RemoveObject(ctx, srv.Bucket, k, minio.RemoveObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	code, out, stderr = runBoth(t, append(g, "backup", "ls", "locked:lab/disk")...)
	if code != 0 || !strings.Contains(out, "b1") || !strings.Contains(out, "b2") {
		t.Fatalf("backup ls after the deletes: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = runBoth(t, append(g, "target", "check", "locked", "-o", "json")...)
	var rows []targetRow
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 1 || rows[0].HiddenObjects < 4 ||
		!strings.Contains(rows[0].Note, "hidden by delete markers") {
		t.Fatalf("target check after the deletes of %d objects: exit %d\n%s%s", len(keys), code, out, stderr)
	}
}
