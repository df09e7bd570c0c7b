package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"golang.org/x/sync/errgroup"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// ListHidden on a versioned Object Lock bucket gives every key a delete
// marker hides over a retained version, also past the 1000 entries of one
// ListObjectVersions page (S3 API Reference: KeyMarker,
// VersionIdMarker), each once; and under store.CurrentOnly the hidden
// keys read as absent while a plain read reads them through.
func TestS3ListHiddenPages(t *testing.T) {
	srv := testutil.StartS3ObjectLockVersioned(t)
	ctx := context.Background()
	st, err := store.Open(ctx, srv.URL("h")+"&lock=governance&retain=1h",
		store.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := minio.New(srv.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(srv.AccessKey, srv.SecretKey, ""),
		Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1100 // 2200 versions and markers: three pages
	ret := store.Retention{Mode: store.LockGovernance, Until: time.Now().Add(time.Hour)}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			key := fmt.Sprintf("x/k%04d", i)
			if err := st.Put(store.WithRetention(gctx, ret), key, []byte(key)); err != nil {
				return err
			}
			return raw.RemoveObject(gctx, srv.Bucket, "h/"+key, minio.RemoveObjectOptions{})
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	if err := store.HiddenListerOf(st).ListHidden(ctx, "x/", false, func(oi store.ObjectInfo) error {
		seen[oi.Key]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if key := fmt.Sprintf("x/k%04d", i); seen[key] != 1 {
			t.Fatalf("ListHidden gave %s %d times (of %d keys given)", key, seen[key], len(seen))
		}
	}
	if got, err := st.Get(ctx, "x/k1099"); err != nil || string(got) != "x/k1099" {
		t.Fatalf("read through = %q, %v", got, err)
	}
	if _, err := st.Stat(store.CurrentOnly(ctx), "x/k1099"); !errors.Is(err, store.ErrObjectNotFound) {
		t.Fatalf("Stat under CurrentOnly of a hidden key = %v, want ErrObjectNotFound", err)
	}
	if _, err := st.Get(store.CurrentOnly(ctx), "x/k1099"); !errors.Is(err, store.ErrObjectNotFound) {
		t.Fatalf("Get under CurrentOnly of a hidden key = %v, want ErrObjectNotFound", err)
	}
}
