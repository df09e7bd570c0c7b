package store

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// intoGetter is a Store that can read an object into the caller's
// buffer. The restore of pkg/s3chain reads every block object this way
// into a buffer it reuses, placed so that a raw block's bytes (after the
// kind byte) start on an O_DIRECT alignment boundary and go to the disk as
// they are:
// measured in BenchmarkRestoreS3, the fresh, zeroed 4 MiB allocation per
// GET and the copy into an aligned buffer were 0.18 s and 0.25 s of 2.06 s
// of restore CPU (docs/BENCHMARKS.md).
type intoGetter interface {
	// getMaxInto is GetMax reading into buf when the object fits
	// (len(result) is the object's size, result aliases buf), else into a
	// new slice. Same errors as GetMax.
	getMaxInto(ctx context.Context, key string, maxBytes int64, buf []byte) ([]byte, error)
}

// GetMaxInto is GetMax reading into buf when the object fits and s can
// (the S3 store, through the retry layer): the result is buf[:size],
// aliasing buf. Otherwise, or when the object is larger than buf, it is
// s.GetMax into fresh memory. Same errors as GetMax.
func GetMaxInto(ctx context.Context, s Store, key string, maxBytes int64, buf []byte) ([]byte, error) {
	if g, ok := s.(intoGetter); ok {
		return g.getMaxInto(ctx, key, maxBytes, buf)
	}
	return s.GetMax(ctx, key, maxBytes)
}

func (r *retryStore) getMaxInto(ctx context.Context, key string, maxBytes int64, buf []byte) (data []byte, err error) {
	err = r.policy.do(ctx, func() error { data, err = GetMaxInto(ctx, r.inner, key, maxBytes, buf); return err })
	return data, err
}

// getMaxInto is s3Store.GetMax into buf: one GET whose Content-Length is
// checked against maxBytes before anything is read.
func (s *s3Store) getMaxInto(ctx context.Context, key string, maxBytes int64, buf []byte) ([]byte, error) {
	body, info, err := s.getObject(ctx, key, "")
	if err != nil {
		if errors.Is(err, ErrObjectNotFound) && s.readsThrough(ctx) {
			return s.GetMax(ctx, key, maxBytes) // reads through a delete marker
		}
		return nil, err
	}
	defer body.Close()
	if info.Size < 0 || info.Size > int64(cap(buf)) {
		body.Close()
		return s.GetMax(ctx, key, maxBytes) // no length, or larger than the buffer: the general path
	}
	if err := checkSize("s3", key, info.Size, maxBytes); err != nil {
		return nil, err
	}
	data := buf[:info.Size]
	// As in GetMax: a body cut short is ErrUnexpectedEOF, so ErrTransient.
	if _, err := io.ReadFull(body, data); err != nil {
		return nil, translateError("get", key, fmt.Errorf("read %d bytes: %w", info.Size, err))
	}
	return data, nil
}
