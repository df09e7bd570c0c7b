package s3chain

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/minio/minio-go/v7"
)

// s3Store keeps each object as the S3 object prefix+key in one bucket,
// through minio-go. It does no retrying of its own and minio-go is told not
// to retry either (Options.MaxRetries = 1): OpenStore wraps it in
// NewRetryStore, the one retry layer, so the number and spacing of attempts
// is decided in one place.
type s3Store struct {
	client *minio.Client
	bucket string
	prefix string // "" or ends in "/"
	url    string // the target URL without credentials, for String
}

// maxObjectSize bounds the buffer Get allocates from a server's
// Content-Length, in bytes: 5 GiB, the largest single PutObject (S3 User
// Guide, "Uploading objects").
const maxObjectSize = 5 << 30

func (s *s3Store) String() string { return s.url }

func (s *s3Store) Put(ctx context.Context, key string, data []byte) error {
	if err := checkKey(ctx, key); err != nil {
		return err
	}
	// PutObject is atomic in S3: a reader sees the old or the new object.
	_, err := s.client.PutObject(ctx, s.bucket, s.prefix+key, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: "application/octet-stream"})
	return translateError("put", key, err)
}

func (s *s3Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := checkKey(ctx, key); err != nil {
		return nil, err
	}
	// Core.GetObject is one GET whose headers give the size; the Object
	// type of minio-go's Client would send a HEAD first.
	body, info, _, err := minio.Core{Client: s.client}.GetObject(ctx, s.bucket, s.prefix+key, minio.GetObjectOptions{})
	if err != nil {
		return nil, translateError("get", key, err)
	}
	defer body.Close()
	if info.Size < 0 || info.Size > maxObjectSize {
		return nil, fmt.Errorf("s3 get %q: size %d not in 0..%d bytes", key, info.Size, int64(maxObjectSize))
	}
	data := make([]byte, info.Size)
	// A connection cut mid-body must not pass for a shorter object:
	// ReadFull fails with io.ErrUnexpectedEOF, which translates to
	// ErrTransient.
	if _, err := io.ReadFull(body, data); err != nil {
		return nil, translateError("get", key, fmt.Errorf("read %d bytes: %w", info.Size, err))
	}
	return data, nil
}

func (s *s3Store) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := checkKey(ctx, key); err != nil {
		return ObjectInfo{}, err
	}
	info, err := s.client.StatObject(ctx, s.bucket, s.prefix+key, minio.StatObjectOptions{})
	if err != nil {
		return ObjectInfo{}, translateError("stat", key, err)
	}
	return ObjectInfo{Key: key, Size: info.Size, ModTime: info.LastModified}, nil
}

func (s *s3Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(ctx, key); err != nil {
		return err
	}
	// S3 DeleteObject answers 204 for a missing key as well.
	return translateError("delete", key, s.client.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{}))
}

// List relies on ListObjectsV2 returning keys in ascending UTF-8 binary
// order (S3 API Reference, ListObjectsV2), which for the key alphabet is
// lexical order. Objects under the prefix whose keys break the key rules
// (written by someone else, or "dir/" markers) are not ours and skipped.
func (s *s3Store) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidatePrefix(prefix); err != nil {
		return err
	}
	// Cancelling stops minio-go's listing goroutine when fn stops early.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for info := range s.client.ListObjectsIter(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + prefix, Recursive: true}) {
		if info.Err != nil {
			return translateError("list", prefix, info.Err)
		}
		key := strings.TrimPrefix(info.Key, s.prefix)
		if ValidateKey(key) != nil {
			continue
		}
		if err := fn(ObjectInfo{Key: key, Size: info.Size, ModTime: info.LastModified}); err != nil {
			return err
		}
	}
	return ctx.Err()
}
