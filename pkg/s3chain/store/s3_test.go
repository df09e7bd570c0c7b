package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
	"github.com/minio/minio-go/v7"
)

// creds returns the credentials of srv (testutil imports no store package).
func creds(srv testutil.S3Server) store.Credentials {
	return store.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}
}

// The suite against the real versitygw: one server, a fresh prefix (so an
// empty store) per subtest.
func TestS3StoreSuite(t *testing.T) {
	srv := testutil.StartS3(t)
	var n atomic.Int32
	storetest.RunSuite(t, func(t *testing.T) store.Store {
		s, err := store.Open(context.Background(), srv.URL(fmt.Sprintf("suite/%d", n.Add(1))), creds(srv))
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
		creds store.Credentials
		want  error
	}{
		{"wrong secret", srv.URL(""), store.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: "hunter2-wrong"}, store.ErrAccessDenied},
		{"unknown key id", srv.URL(""), store.Credentials{AccessKeyID: "NOSUCHKEY", SecretAccessKey: "hunter2-wrong"}, store.ErrAccessDenied},
		{"anonymous", srv.URL(""), store.Credentials{}, store.ErrAccessDenied},
		{"missing bucket", strings.Replace(srv.URL(""), srv.Bucket, "no-such-bucket", 1), good, store.ErrNoBucket},
		// The operator forgot insecure=true for a plain-HTTP endpoint: a
		// target error naming the cause at once, not minutes of retries
		// of a "transient" one (newcomer run, issue 15's session).
		{"plain HTTP without insecure", strings.Replace(srv.URL(""), "&insecure=true", "", 1), good, store.ErrPlainHTTP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := store.Open(ctx, tc.url, tc.creds)
			if !errors.Is(err, tc.want) || !errors.Is(err, store.ErrAccessDenied) && !errors.Is(err, store.ErrBadTarget) {
				t.Fatalf("Open = %v, %v; want %v", s, err, tc.want)
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
	s, err := store.Open(ctx, srv.URL("backups/cluster1"), creds(srv))
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
	root, err := store.Open(ctx, srv.URL(""), creds(srv))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := root.Get(ctx, "backups/cluster1/v/obj"); err != nil || string(got) != "hello" {
		t.Fatalf("Get of the full key = %q, %v; want hello", got, err)
	}
}

// versitygw (v1.8.0) honours If-None-Match: * on PutObject: a second
// PutIfAbsent is its 412 PreconditionFailed, the first bytes stay, and the
// probe that found this out left nothing in the bucket.
func TestS3StoreConditionalWrites(t *testing.T) {
	srv := testutil.StartS3(t)
	ctx := context.Background()
	s, err := store.Open(ctx, srv.URL("cond"), creds(srv))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx, "c/lock", []byte("first")); err != nil {
		t.Fatalf("PutIfAbsent = %v, want nil (conditional writes supported)", err)
	}
	err = s.PutIfAbsent(ctx, "c/lock", []byte("second"))
	var resp minio.ErrorResponse
	if !errors.Is(err, store.ErrObjectExists) || !errors.As(err, &resp) || resp.StatusCode != http.StatusPreconditionFailed {
		t.Fatalf("second PutIfAbsent = %v (answer %+v), want ErrObjectExists from the server's 412", err, resp)
	}
	t.Logf("versitygw answers a taken key with %d %s", resp.StatusCode, resp.Code)
	if got, err := s.GetMax(ctx, "c/lock", 5); err != nil || string(got) != "first" {
		t.Fatalf("GetMax = %q, %v; want first", got, err)
	}
	if probes := probeFiles(t, srv.Dir); len(probes) != 0 {
		t.Fatalf("probe objects left in the bucket: %q", probes)
	}
}

// A server that ignores If-None-Match (simulated by leaving the header
// out) is found out by the probe: PutIfAbsent then answers ErrNotAtomic
// and writes nothing, and everything else passes the suite as before.
func TestS3StoreSuiteIgnoringIfNoneMatch(t *testing.T) {
	srv := testutil.StartS3(t)
	var n atomic.Int32
	storetest.RunSuite(t, func(t *testing.T) store.Store {
		s, err := store.OpenS3IgnoringIfNoneMatch(context.Background(), srv.URL(fmt.Sprintf("nocond/%d", n.Add(1))), creds(srv))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, storetest.NoAtomicCreate())
	if probes := probeFiles(t, srv.Dir); len(probes) != 0 {
		t.Fatalf("probe objects left in the bucket: %q", probes)
	}
}

// probeFiles lists the files of the posix backend under dir whose name
// holds the probe marker.
func probeFiles(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.Contains(d.Name(), "probe~") {
			found = append(found, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// hostileS3 answers every object GET with a body of size bytes: with a
// Content-Length it announces, or chunked without one (lie: a smaller
// Content-Length is not possible, Go's client cuts the body there).
// It counts the body bytes it managed to send.
type hostileS3 struct {
	size    int64
	chunked bool
	sent    atomic.Int64
}

func (h *hostileS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/bkt" || r.URL.Path == "/bkt/" { // ListObjectsV2 at open
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, `<ListBucketResult><Name>bkt</Name><Prefix>p/</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>`)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
	w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
	if !h.chunked {
		w.Header().Set("Content-Length", strconv.FormatInt(h.size, 10))
	}
	chunk := bytes.Repeat([]byte{'z'}, 64<<10)
	for left := h.size; left > 0; {
		n, err := w.Write(chunk[:min(left, int64(len(chunk)))])
		h.sent.Add(int64(n))
		if err != nil {
			return
		}
		left -= int64(n)
		if h.chunked {
			w.(http.Flusher).Flush()
		}
	}
}

// GetMax refuses an object over its bound from the announced size alone,
// and from the bytes read when the server announces none, without reading
// the rest: a hostile bucket cannot make it buffer more than the bound.
func TestS3StoreGetMaxHostileServer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		chunked bool
	}{{"content-length", false}, {"chunked", true}} {
		t.Run(tc.name, func(t *testing.T) {
			h := &hostileS3{size: 256 << 20, chunked: tc.chunked}
			srv := httptest.NewServer(h)
			defer srv.Close()
			u, _ := url.Parse(srv.URL)
			ctx := context.Background()
			s, err := store.Open(ctx, "s3://bkt/p?region=us-east-1&insecure=true&endpoint="+u.Host,
				store.Credentials{AccessKeyID: "k", SecretAccessKey: "s"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.GetMax(ctx, "blk", 1<<20)
			if !errors.Is(err, store.ErrObjectTooLarge) || !strings.Contains(err.Error(), `"blk"`) {
				t.Fatalf("GetMax of a 256 MiB object with a 1 MiB bound = %v, want ErrObjectTooLarge naming the key", err)
			}
			srv.CloseClientConnections()
			// TCP buffers take some, but far from all of it.
			if sent := h.sent.Load(); sent > 64<<20 {
				t.Fatalf("server got to send %d MiB of a refused object", sent>>20)
			}
			h.size = 1 << 20 // at the bound: the whole object
			if got, err := s.GetMax(ctx, "blk", 1<<20); err != nil || len(got) != 1<<20 {
				t.Fatalf("GetMax at the bound = %d bytes, %v", len(got), err)
			}
		})
	}
}
