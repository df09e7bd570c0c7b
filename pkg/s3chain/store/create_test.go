package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// CreateTarget makes a missing bucket on the real versitygw, after which
// Open succeeds; a second call creates nothing; refused credentials are
// ErrAccessDenied and leave no bucket.
func TestCreateTargetS3(t *testing.T) {
	srv := testutil.StartS3(t)
	ctx := context.Background()
	fresh := strings.Replace(srv.URL("p"), srv.Bucket, srv.Bucket+"-new", 1)
	if _, err := store.Open(ctx, fresh, creds(srv)); !errors.Is(err, store.ErrNoBucket) {
		t.Fatalf("Open before CreateTarget = %v, want ErrNoBucket", err)
	}
	bad := store.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: "hunter2-wrong"}
	if created, err := store.CreateTarget(ctx, fresh, bad); !errors.Is(err, store.ErrAccessDenied) || created {
		t.Fatalf("CreateTarget with a wrong secret = %v, %v; want ErrAccessDenied", created, err)
	}
	if _, err := os.Stat(filepath.Join(srv.Dir, srv.Bucket+"-new")); err == nil {
		t.Fatal("a refused CreateTarget left a bucket")
	}
	for i, want := range []bool{true, false} {
		created, err := store.CreateTarget(ctx, fresh, creds(srv))
		if err != nil || created != want {
			t.Fatalf("CreateTarget #%d = %v, %v; want %v, nil", i+1, created, err, want)
		}
	}
	if _, err := store.Open(ctx, fresh, creds(srv)); err != nil {
		t.Fatalf("Open after CreateTarget: %v", err)
	}
	if _, err := store.CreateTarget(ctx, "s3://a?endpoint="+srv.Endpoint, creds(srv)); !errors.Is(err, store.ErrBadTarget) {
		t.Fatalf("CreateTarget of a bucket name too short = %v, want ErrBadTarget", err)
	}
}

// CreateTarget of a file:// URL makes the directory and its parents once;
// a path that is a file is ErrBadTarget.
func TestCreateTargetFile(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "a", "b")
	for i, want := range []bool{true, false} {
		if created, err := store.CreateTarget(ctx, "file://"+dir, store.Credentials{}); err != nil || created != want {
			t.Fatalf("CreateTarget #%d = %v, %v; want %v, nil", i+1, created, err, want)
		}
	}
	if _, err := store.Open(ctx, "file://"+dir, store.Credentials{}); err != nil {
		t.Fatalf("Open after CreateTarget: %v", err)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CreateTarget(ctx, "file://"+file, store.Credentials{}); !errors.Is(err, store.ErrBadTarget) {
		t.Fatalf("CreateTarget of a file = %v, want ErrBadTarget", err)
	}
}

// Keys that may use a bucket but not create one (versitygw's role "user",
// as most providers scope keys): CreateTarget is ErrAccessDenied until an
// administrator makes the bucket theirs, then it creates nothing and
// succeeds, and Open works.
func TestCreateTargetScopedKeys(t *testing.T) {
	srv := testutil.StartS3WithUsers(t)
	ctx := context.Background()
	srv.AddUser(t, "scoped", "scoped-secret-123", "user")
	scoped := store.Credentials{AccessKeyID: "scoped", SecretAccessKey: "scoped-secret-123"}
	url := strings.Replace(srv.URL("p"), srv.Bucket, srv.Bucket+"-scoped", 1)
	if created, err := store.CreateTarget(ctx, url, scoped); !errors.Is(err, store.ErrAccessDenied) || created {
		t.Fatalf("CreateTarget with keys that may not create buckets = %v, %v; want ErrAccessDenied", created, err)
	}
	if created, err := store.CreateTarget(ctx, url, creds(srv)); err != nil || !created {
		t.Fatalf("CreateTarget as root = %v, %v", created, err)
	}
	srv.SetBucketOwner(t, srv.Bucket+"-scoped", "scoped")
	if created, err := store.CreateTarget(ctx, url, scoped); err != nil || created {
		t.Fatalf("CreateTarget of the scoped keys' own bucket = %v, %v; want false, nil", created, err)
	}
	if _, err := store.Open(ctx, url, scoped); err != nil {
		t.Fatalf("Open with the scoped keys: %v", err)
	}
}

// CreateTarget of a target that asks for Object Lock (lock=, retain=)
// makes its bucket with Object Lock enabled, which S3 allows only at
// creation (or after versioning): a bucket made without it fails the
// target's first backup (ErrNoObjectLock) and its check.
func TestCreateTargetObjectLock(t *testing.T) {
	srv := testutil.StartS3(t)
	ctx := context.Background()
	fresh := strings.Replace(srv.URL("p"), srv.Bucket, srv.Bucket+"-locked", 1) + "&lock=governance&retain=1d"
	if created, err := store.CreateTarget(ctx, fresh, creds(srv)); err != nil || !created {
		t.Fatalf("CreateTarget = %v, %v", created, err)
	}
	s, err := store.Open(ctx, fresh, creds(srv))
	if err != nil {
		t.Fatalf("Open after CreateTarget: %v", err)
	}
	bl, err := store.LockerOf(s).BucketLock(ctx)
	if err != nil || !bl.Enabled || bl.DefaultMode != "" {
		t.Fatalf("bucket made for a lock= target: %+v, %v; want Object Lock enabled, no default retention", bl, err)
	}
}
