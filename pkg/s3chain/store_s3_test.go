package s3chain_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// creds returns the credentials of srv (testutil cannot import s3chain).
func creds(srv testutil.S3Server) s3chain.Credentials {
	return s3chain.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}
}

// The suite against the real versitygw: one server, a fresh prefix (so an
// empty store) per subtest.
func TestS3StoreSuite(t *testing.T) {
	srv := testutil.StartS3(t)
	var n atomic.Int32
	storetest.RunSuite(t, func(t *testing.T) s3chain.Store {
		s, err := s3chain.OpenStore(context.Background(), srv.URL(fmt.Sprintf("suite/%d", n.Add(1))), creds(srv))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestS3StoreOpenErrors(t *testing.T) {
	srv := testutil.StartS3(t)
	ctx := context.Background()
	good := creds(srv)
	for _, tc := range []struct {
		name  string
		url   string
		creds s3chain.Credentials
		want  error
	}{
		{"wrong secret", srv.URL(""), s3chain.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: "hunter2-wrong"}, s3chain.ErrAccessDenied},
		{"unknown key id", srv.URL(""), s3chain.Credentials{AccessKeyID: "NOSUCHKEY", SecretAccessKey: "hunter2-wrong"}, s3chain.ErrAccessDenied},
		{"anonymous", srv.URL(""), s3chain.Credentials{}, s3chain.ErrAccessDenied},
		{"missing bucket", strings.Replace(srv.URL(""), srv.Bucket, "no-such-bucket", 1), good, s3chain.ErrBadTarget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := s3chain.OpenStore(ctx, tc.url, tc.creds)
			if !errors.Is(err, tc.want) {
				t.Fatalf("OpenStore = %v, %v; want %v", s, err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), srv.SecretKey) {
				t.Fatalf("error leaks a secret: %v", err)
			}
		})
	}
}

// String names the target without credentials, and keys land under the
// URL's prefix in the bucket (checked on the posix backend's disk).
func TestS3StoreStringAndPrefix(t *testing.T) {
	srv := testutil.StartS3(t)
	ctx := context.Background()
	s, err := s3chain.OpenStore(ctx, srv.URL("backups/cluster1"), creds(srv))
	if err != nil {
		t.Fatal(err)
	}
	want := "s3://" + srv.Bucket + "/backups/cluster1?endpoint=" + strings.ReplaceAll(srv.Endpoint, ":", "%3A") + "&insecure=true&region=us-east-1"
	if s.String() != want {
		t.Fatalf("String() = %q, want %q", s.String(), want)
	}
	if strings.Contains(s.String(), srv.SecretKey) || strings.Contains(s.String(), srv.AccessKey) {
		t.Fatalf("String() shows credentials: %q", s.String())
	}
	if err := s.Put(ctx, "v/obj", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	// Through a store on the bucket root, the object has the full key.
	root, err := s3chain.OpenStore(ctx, srv.URL(""), creds(srv))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := root.Get(ctx, "backups/cluster1/v/obj"); err != nil || string(got) != "hello" {
		t.Fatalf("Get of the full key = %q, %v; want hello", got, err)
	}
}
