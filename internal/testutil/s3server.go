package testutil

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/chainvol/chainvol/internal/versitygw"
)

// S3Server is a running versitygw S3 gateway on loopback, started by
// StartS3. It deliberately returns plain strings, not s3chain types:
// s3chain's tests import testutil, so testutil must not import s3chain.
type S3Server struct {
	// Endpoint is "127.0.0.1:PORT", plain HTTP (HTTPS from StartS3TLS).
	Endpoint string
	// CAFile is the PEM of the private CA that signed the gateway's
	// certificate (StartS3TLS only; "" for plain HTTP).
	CAFile string
	// AccessKey and SecretKey are the random root credentials.
	AccessKey, SecretKey string
	// Bucket is the one bucket created at start.
	Bucket string
	// Dir is the posix backend's root directory; Bucket is Dir/Bucket.
	Dir string
	// ObjectLock: Bucket was created with Object Lock enabled
	// (StartS3ObjectLock); Versioned: the gateway keeps object versions
	// (StartS3ObjectLockVersioned), as AWS does for every Object Lock bucket.
	ObjectLock, Versioned bool
	// bin is the versitygw binary; iamDir, when set, holds the accounts
	// of its internal IAM (StartS3WithUsers).
	bin, iamDir string
}

// URL returns the s3:// target URL for store.Open naming Bucket and
// the key prefix prefix ("" for the bucket root): s3://BUCKET/PREFIX?
// endpoint=127.0.0.1:PORT&region=us-east-1&insecure=true, or with
// ca=CAFile instead of insecure=true for a StartS3TLS gateway.
func (s S3Server) URL(prefix string) string {
	u := "s3://" + s.Bucket
	if prefix != "" {
		u += "/" + prefix
	}
	q := url.Values{"endpoint": {s.Endpoint}, "region": {"us-east-1"}, "insecure": {"true"}}
	if s.CAFile != "" {
		q.Del("insecure")
		q.Set("ca", s.CAFile)
	}
	return u + "?" + q.Encode()
}

// versitygwPath returns bin/versitygw at the repository root, found by
// walking up from the working directory to go.mod, or "" if absent.
func versitygwPath() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, "bin", "versitygw")
			if _, err := os.Stat(p); err != nil {
				return ""
			}
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// StartS3 starts the real versitygw (bin/versitygw, v1.8.0, built by make
// deps) with its posix backend on a t.TempDir(), on a free loopback port
// with random root credentials, creates one bucket and waits (up to 10 s)
// until the gateway answers. The gateway is killed when the test ends.
// Without the binary the test is skipped, or fails under CI=true.
func StartS3(t testing.TB) S3Server {
	t.Helper()
	return startS3(t, nil, s3Options{})
}

// StartS3ObjectLock is StartS3 with a bucket created with S3 Object Lock
// enabled (x-amz-bucket-object-lock-enabled, no default retention). The
// gateway runs without a versioning directory, so a locked object's
// delete or overwrite is refused outright, as a versioned S3 bucket
// refuses a DELETE naming a version.
func StartS3ObjectLock(t testing.TB) S3Server {
	t.Helper()
	return startS3(t, nil, s3Options{lock: true})
}

// StartS3ObjectLockVersioned is StartS3ObjectLock on a gateway with a
// versioning directory (--versioning-dir), so the Object Lock bucket is
// versioned as on AWS: a DELETE without a version id adds a delete marker
// (also over a locked object), a PUT over a key adds a version.
func StartS3ObjectLockVersioned(t testing.TB) S3Server {
	t.Helper()
	return startS3(t, nil, s3Options{lock: true, versioned: true})
}

// s3Options are the variants of a started gateway: an Object Lock
// bucket, a versioning directory, versitygw's internal IAM (users).
type s3Options struct {
	lock, versioned, users bool
}

// startS3 is StartS3, over HTTPS when tls is not nil, with the bucket and
// gateway of o.
func startS3(t testing.TB, tls *s3TLS, o s3Options) S3Server {
	t.Helper()
	bin := versitygwPath()
	if bin == "" {
		SkipOrFail(t, "bin/versitygw not found at the repository root: run make deps")
	}
	s := S3Server{
		AccessKey:  "AK" + randHex(t, 9),
		SecretKey:  randHex(t, 20),
		Bucket:     "chainvol-" + randHex(t, 4),
		Dir:        t.TempDir(),
		ObjectLock: o.lock,
		Versioned:  o.versioned,
		bin:        bin,
	}
	if o.users {
		s.iamDir = t.TempDir()
	}
	// A port picked by the kernel can be taken before versitygw binds it;
	// try a few.
	var err error
	for range 3 {
		if err = s.start(t, bin, tls); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	return s
}

func (s *S3Server) start(t testing.TB, bin string, tls *s3TLS) error {
	o := versitygw.Options{Bin: bin, Dir: s.Dir, AccessKey: s.AccessKey, SecretKey: s.SecretKey, Timeout: 10 * time.Second}
	if s.iamDir != "" {
		o.Args = append(o.Args, "--iam-dir", s.iamDir)
	}
	if tls != nil {
		o.Args = append(o.Args, "--cert", tls.certFile, "--key", tls.keyFile)
		o.Health, o.HTTPS, s.CAFile = tls.client(time.Second), true, tls.caFile
	}
	if s.Versioned {
		o.PosixArgs = []string{"--versioning-dir", t.TempDir()} // must exist
	}
	var out lockedBuffer
	o.Output = &out
	g, err := versitygw.Start(o)
	if err != nil {
		return fmt.Errorf("%w; versitygw output:\n%s", err, out.String())
	}
	s.Endpoint = g.Endpoint
	t.Cleanup(g.Stop)
	var transport http.RoundTripper // nil: minio-go's default
	if o.Health != nil {
		transport = o.Health.Transport
	}
	if err := s.makeBucket(transport); err != nil {
		return fmt.Errorf("create bucket %s: %w", s.Bucket, err)
	}
	return nil
}

func (s S3Server) makeBucket(transport http.RoundTripper) error {
	client, err := minio.New(s.Endpoint, &minio.Options{
		Secure:       s.CAFile != "",
		Transport:    transport, // nil: minio-go's default
		Creds:        credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
		Region:       "us-east-1",
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return client.MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{Region: "us-east-1", ObjectLocking: s.ObjectLock})
}

func randHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// lockedBuffer collects the gateway's output; the process writes it from
// two goroutines of os/exec.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
