package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/chainvol/chainvol/internal/versitygw"
)

// Buckets of the one versitygw: chainvol's and restic's sit side by side on
// the same gateway and disk, so neither gets a faster store.
const (
	chainvolBucket = "chainvol"
	resticBucket   = "restic"
	// limitBucket holds the null backup's objects while it runs.
	limitBucket = "limit"
)

// s3 is the running versitygw (posix backend under dir) and a plain
// minio-go client of it, used for the limit and to size the buckets.
type s3 struct {
	endpoint, access, secret string
	dir                      string
	client                   *minio.Client
	// pid is versitygw's process id: the bench reads its CPU time around
	// restores, because on one machine the S3 server's CPU is the
	// restore's too (docs/BENCHMARKS.md).
	pid int
}

// startS3 starts bin/versitygw on a free loopback port with random root
// credentials (internal/versitygw, as for the tests) and makes the buckets.
func startS3(e *env) (*s3, error) {
	s := &s3{access: "AK" + randHex(9), secret: randHex(20), dir: filepath.Join(e.tmp, "s3")}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(e.tmp, "versitygw.log"))
	if err != nil {
		return nil, err
	}
	g, err := versitygw.Start(versitygw.Options{Bin: e.bin("versitygw"), Dir: s.dir, AccessKey: s.access, SecretKey: s.secret,
		Output: logFile, Timeout: 15 * time.Second})
	if err != nil {
		logFile.Close()
		return nil, err
	}
	s.endpoint, s.pid = g.Endpoint, g.Pid
	e.defer_(func() { g.Stop(); logFile.Close() })
	s.client, err = minio.New(s.endpoint, &minio.Options{Creds: credentials.NewStaticV4(s.access, s.secret, ""),
		Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		return nil, err
	}
	for _, b := range []string{chainvolBucket, resticBucket, limitBucket} {
		if err := s.client.MakeBucket(context.Background(), b, minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
			return nil, fmt.Errorf("make bucket %s: %w", b, err)
		}
	}
	return s, nil
}

// chainvolURL is the driver's and chainvolctl's s3:// target URL.
func (s *s3) chainvolURL() string {
	q := url.Values{"endpoint": {s.endpoint}, "region": {"us-east-1"}, "insecure": {"true"}}
	return "s3://" + chainvolBucket + "?" + q.Encode()
}

// writeCredentials writes the key=value credentials file chainvol reads.
func (s *s3) writeCredentials(path string) error {
	return os.WriteFile(path, []byte("accessKeyID="+s.access+"\nsecretAccessKey="+s.secret+"\n"), 0o600)
}

// bucketBytes sums the sizes of every object in a bucket: the bytes a
// repository holds, measured the same way for both tools.
func (s *s3) bucketBytes(ctx context.Context, bucket string) (int64, int, error) {
	var n int64
	var count int
	for o := range s.client.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			return 0, 0, o.Err
		}
		n += o.Size
		count++
	}
	return n, count, nil
}

// freeLoopback is a loopback address with a port free a moment ago, for a
// child to listen on.
func freeLoopback() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
