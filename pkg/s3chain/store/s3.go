package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"

	"github.com/minio/minio-go/v7"
)

// s3Store keeps each object as the S3 object prefix+key in one bucket,
// through minio-go. It does no retrying of its own and minio-go is told not
// to retry either (Options.MaxRetries = 1): Open wraps it in
// NewRetryStore, the one retry layer, so the number and spacing of attempts
// is decided in one place.
type s3Store struct {
	client    *minio.Client
	checked   *minio.Client     // client with TrailingHeaders, for SelfChecked PUTs (s3_checked.go); nil: none
	transport http.RoundTripper // client's, for the presigned GetObjectRetention of s3_hidden.go
	bucket    string
	prefix    string // "" or ends in "/"
	url       string // the target URL without credentials, for String
	cond      condProbe
	lock      LockPolicy // lock= and retain= of the URL

	// ignoreIfNoneMatch, for tests only, sends conditional PUTs without
	// their If-None-Match header, as a server that ignores it behaves.
	ignoreIfNoneMatch bool
}

func (s *s3Store) String() string { return s.url }

func (s *s3Store) Put(ctx context.Context, key string, data []byte) error {
	if err := checkKey(ctx, key); err != nil {
		return err
	}
	// PutObject is atomic in S3: a reader sees the old or the new object.
	client, opts := s.checkedPut(ctx, putOptions(ctx), data)
	_, err := client.PutObject(ctx, s.bucket, s.prefix+key, bytes.NewReader(data), int64(len(data)), opts)
	return translateError("put", key, err)
}

func (s *s3Store) Get(ctx context.Context, key string) ([]byte, error) {
	return s.GetMax(ctx, key, maxObjectSize)
}

// getObject starts one GET of a version of key ("" the current one): Core.GetObject, whose headers give the
// size (the Object type of minio-go's Client would send a HEAD first).
// Errors: checkKey's, and the GET's translated (ErrObjectNotFound, ...).
func (s *s3Store) getObject(ctx context.Context, key, versionID string) (io.ReadCloser, minio.ObjectInfo, error) {
	if err := checkKey(ctx, key); err != nil {
		return nil, minio.ObjectInfo{}, err
	}
	body, info, _, err := minio.Core{Client: s.client}.GetObject(ctx, s.bucket, s.prefix+key, minio.GetObjectOptions{VersionID: versionID})
	if err != nil {
		return nil, info, translateError("get", key, err)
	}
	return body, info, nil
}

// GetMax checks the Content-Length of the GET answer before reading the
// body, and reads at most maxBytes+1 bytes when the server sends none.
// A key hidden by a delete marker is read through (s3_hidden.go).
func (s *s3Store) GetMax(ctx context.Context, key string, maxBytes int64) ([]byte, error) {
	data, err := s.getVersion(ctx, key, "", maxBytes)
	if !errors.Is(err, ErrObjectNotFound) || !s.readsThrough(ctx) {
		return data, err
	}
	v, _, herr := s.hiddenVersion(ctx, key)
	if herr != nil {
		return nil, err
	}
	return s.getVersion(ctx, key, v.VersionID, maxBytes)
}

// getVersion is one GET of a version of key ("" the current one).
func (s *s3Store) getVersion(ctx context.Context, key, versionID string, maxBytes int64) ([]byte, error) {
	body, info, err := s.getObject(ctx, key, versionID)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	if info.Size < 0 { // no Content-Length: read up to the bound and one byte more
		data, err := io.ReadAll(io.LimitReader(body, min(max(maxBytes, 0), math.MaxInt64-1)+1))
		if err != nil {
			return nil, translateError("get", key, fmt.Errorf("read: %w", err))
		}
		if err := checkSize("s3", key, int64(len(data)), maxBytes); err != nil {
			return nil, err
		}
		return data, nil
	}
	if err := checkSize("s3", key, info.Size, maxBytes); err != nil {
		return nil, err
	}
	data := make([]byte, info.Size)
	// A connection cut mid-body must not pass for a shorter object:
	// ReadFull fails with io.ErrUnexpectedEOF, which translates to
	// ErrTransient. Go's HTTP client ends the body at Content-Length, so
	// a longer body cannot overrun data.
	if _, err := io.ReadFull(body, data); err != nil {
		return nil, translateError("get", key, fmt.Errorf("read %d bytes: %w", info.Size, err))
	}
	return data, nil
}

// PutIfAbsent sends PutObject with If-None-Match: * (AWS S3 conditional
// writes, 2024; versitygw from v1.0): the server answers 412
// PreconditionFailed when the key exists, which is ErrObjectExists. A
// server that ignores the header would overwrite silently, so the first
// call on a store probes the server (see condProbe) and, if it ignores the
// header, this and every later call answers ErrNotAtomic without writing.
func (s *s3Store) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := checkKey(ctx, key); err != nil {
		return err
	}
	// The probe object carries no retention, so that it can be deleted.
	if err := s.cond.check(WithRetention(ctx, Retention{}), s.putIfNoneMatch, s.deleteObject); err != nil {
		return fmt.Errorf("s3 put-if-absent %q: %w", key, err)
	}
	return s.putIfNoneMatch(ctx, key, data)
}

// putIfNoneMatch is one conditional PutObject of key (under the prefix;
// not validated, so that the probe may use a key List never shows).
func (s *s3Store) putIfNoneMatch(ctx context.Context, key string, data []byte) error {
	opts := putOptions(ctx)
	if !s.ignoreIfNoneMatch {
		opts.SetMatchETagExcept("*") // If-None-Match: *
	}
	_, err := s.client.PutObject(ctx, s.bucket, s.prefix+key, bytes.NewReader(data), int64(len(data)), opts)
	return translateError("put-if-absent", key, err)
}

// deleteObject deletes key under the prefix without validating it.
func (s *s3Store) deleteObject(ctx context.Context, key string) error {
	return translateError("delete", key, s.client.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{}))
}

func (s *s3Store) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := checkKey(ctx, key); err != nil {
		return ObjectInfo{}, err
	}
	info, err := s.client.StatObject(ctx, s.bucket, s.prefix+key, minio.StatObjectOptions{})
	if err != nil {
		err = translateError("stat", key, err)
		if !errors.Is(err, ErrObjectNotFound) || !s.readsThrough(ctx) {
			return ObjectInfo{}, err
		}
		var herr error
		if info, _, herr = s.hiddenVersion(ctx, key); herr != nil {
			return ObjectInfo{}, err
		}
	}
	return ObjectInfo{Key: key, Size: info.Size, ModTime: info.LastModified}, nil
}

func (s *s3Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(ctx, key); err != nil {
		return err
	}
	// S3 DeleteObject answers 204 for a missing key as well.
	return s.deleteObject(ctx, key)
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

// probePrefix is where the conditional-write probe writes, under the
// store's prefix: a reserved name, with a '~' (outside the key alphabet)
// so that List never reports a probe object a crash left behind.
const probePrefix = ".chainvol/probe~"

type condState int

const (
	condUnknown condState = iota
	condSupported
	condUnsupported
)

// condProbe finds out, once per store, whether the server honours
// If-None-Match: * on PutObject. S3-compatible servers that predate AWS's
// conditional writes (August 2024) ignore the header and overwrite, which
// no single answer reveals; so the probe writes a fresh object twice,
// conditionally: a second success means the header is ignored. A failed
// probe (network, throttling) is not remembered and runs again next time.
type condProbe struct {
	mu    sync.Mutex
	state condState
}

// check returns nil when conditional writes work, an error wrapping
// ErrNotAtomic when they do not, or the probe's own error. put is one
// conditional PutObject (ErrObjectExists on 412), del a DeleteObject.
func (c *condProbe) check(ctx context.Context, put func(context.Context, string, []byte) error,
	del func(context.Context, string) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == condUnknown {
		st, err := probeConditional(ctx, put, del)
		if err != nil {
			return fmt.Errorf("probing the server for conditional writes: %w", err)
		}
		c.state = st
	}
	if c.state == condUnsupported {
		return fmt.Errorf("%w: the S3 server ignores If-None-Match (a second conditional PUT of one probe object succeeded)", ErrNotAtomic)
	}
	return nil
}

func probeConditional(ctx context.Context, put func(context.Context, string, []byte) error,
	del func(context.Context, string) error) (condState, error) {
	key := probePrefix + rand.Text()
	// Best effort, even when ctx is cancelled: the probe is invisible to
	// List anyway.
	defer func() { _ = del(context.WithoutCancel(ctx), key) }()
	err := put(ctx, key, []byte("probe 1"))
	if resp := (minio.ErrorResponse{}); errors.As(err, &resp) && resp.Code == "NotImplemented" {
		return condUnsupported, nil // refuses the header outright
	}
	if err != nil {
		return condUnknown, err
	}
	switch err := put(ctx, key, []byte("probe 2")); {
	case err == nil:
		return condUnsupported, nil
	case errors.Is(err, ErrObjectExists):
		return condSupported, nil
	default:
		return condUnknown, err
	}
}
