package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/minio/minio-go/v7"
)

// ErrBucketTaken: the bucket name belongs to another account (S3
// BucketAlreadyExists; bucket names are global on AWS); it is also
// ErrBadTarget: only another name helps.
var ErrBucketTaken = fmt.Errorf("%w: the bucket name is taken by another account", ErrBadTarget)

// defaultCreateRegion is where a bucket goes when the URL names no region:
// us-east-1, the region S3 and its clones assume without a
// LocationConstraint (S3 API Reference, CreateBucket).
const defaultCreateRegion = "us-east-1"

// CreateTarget makes what the target URL rawURL names, so that Open then
// finds it: a file:// directory with its parents (mode 0700), or an s3://
// bucket, created with creds (minio-go's credential chain when creds has no
// key, as in Open) in the URL's region, us-east-1 when it names none, with
// Object Lock enabled when the URL asks for retention (lock=, retain=). It
// reports whether it created anything: an existing directory, or a bucket
// that exists and that creds may reach, is not an error. It writes no
// object (the first backup of a chain does).
//
// Errors: ErrBadTarget (malformed URL, see Open; a path that is not a
// directory), ErrBucketTaken, ErrAccessDenied (the credentials may not
// create the bucket: it must be made by someone who may), ErrTransient
// (the server is unreachable; one attempt, no retry), and those of
// os.MkdirAll.
func CreateTarget(ctx context.Context, rawURL string, creds Credentials) (created bool, err error) {
	p, err := parseURL(rawURL)
	if err != nil {
		return false, err
	}
	if p.s3 == nil {
		return createDir(p.dir)
	}
	s3, err := newS3Store(*p.s3, creds)
	if err != nil {
		return false, err
	}
	return createBucket(ctx, s3.client, *p.s3)
}

// createDir makes dir and its parents, reporting whether dir was missing.
func createDir(dir string) (bool, error) {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return false, fmt.Errorf("%w: file target %s is not a directory", ErrBadTarget, dir)
		}
		return false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	return true, os.MkdirAll(dir, 0o700)
}

// createBucket makes t's bucket unless it exists. It asks first, so that
// credentials that may use a bucket but not create one still succeed on an
// existing bucket (a HEAD that such a key may send).
func createBucket(ctx context.Context, client *minio.Client, t s3Target) (bool, error) {
	exists, err := client.BucketExists(ctx, t.bucket)
	if err == nil && exists {
		return false, nil
	}
	// A target asking for retention needs a bucket with Object Lock, which
	// S3 enables only at creation (or on a versioned bucket): made without
	// it, the target's first backup fails with ErrNoObjectLock.
	err = client.MakeBucket(ctx, t.bucket, minio.MakeBucketOptions{Region: cmp.Or(t.region, defaultCreateRegion),
		ObjectLocking: t.lock.Enabled()})
	switch minio.ToErrorResponse(err).Code {
	case "":
		if err != nil {
			return false, translateError("create bucket", t.bucket, err)
		}
		return true, nil
	case minio.BucketAlreadyOwnedByYou:
		return false, nil
	case minio.BucketAlreadyExists:
		return false, fmt.Errorf("create bucket %q at %s: %w", t.bucket, t.endpoint, ErrBucketTaken)
	}
	return false, translateError("create bucket", t.bucket, err)
}
