package s3chain

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// A lock is never read through a delete marker (FORMAT.md §7.4 "Delete
// markers"): locks carry no retention, but one may get it anyway (a
// default retention rule set on the bucket after the target's first
// check); a lock taken over by a plain DELETE is then a marker over a
// retained version, and its holder must still see it gone (ErrLeaseLost),
// not read it through and commit, or write it back, as if it held it.
func TestLeaseLockNotReadThroughMarker(t *testing.T) {
	srv := testutil.StartS3ObjectLockVersioned(t)
	ctx := context.Background()
	s, err := store.Open(ctx, srv.URL("p")+"&lock=governance&retain=1h",
		store.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRepo(s, RepoOptions{LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	l, _, err := r.hold(ctx, "ns/l", "writer")
	if err != nil {
		t.Fatal(err)
	}
	defer l.release(ctx)
	// The retention a bucket default rule would have given the lock.
	ret := store.Retention{Mode: store.LockGovernance, Until: time.Now().Add(time.Hour)}
	if err := store.LockerOf(s).Retain(ctx, l.key, ret); err != nil {
		t.Fatal(err)
	}
	raw, err := minio.New(srv.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(srv.AccessKey, srv.SecretKey, ""),
		Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.RemoveObject(ctx, srv.Bucket, "p/"+l.key, minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err) // the takeover's plain DELETE: a marker over the retained version
	}
	if err := l.held(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("held after the lock was deleted = %v, want ErrLeaseLost", err)
	}
}
