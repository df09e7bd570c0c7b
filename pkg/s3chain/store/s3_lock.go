package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/minio/minio-go/v7"
)

var _ Locker = (*s3Store)(nil)

// putOptions are the options of every PutObject: the retention of ctx
// (WithRetention), if any, as x-amz-object-lock-mode and
// -retain-until-date, with a Content-MD5, which S3 requires of a PUT that
// carries Object Lock headers (S3 API Reference, PutObject).
func putOptions(ctx context.Context) minio.PutObjectOptions {
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream"}
	if r := RetentionOf(ctx); r.Mode != "" {
		opts.Mode = minio.RetentionMode(r.Mode)
		opts.RetainUntilDate = ceilSecond(r.Until.UTC())
		opts.SendContentMd5 = true
	}
	return opts
}

// LockPolicy is the lock= and retain= of the target URL.
func (s *s3Store) LockPolicy() LockPolicy { return s.lock }

// BucketLock is GetObjectLockConfiguration; S3's
// ObjectLockConfigurationNotFoundError means a bucket without Object Lock.
func (s *s3Store) BucketLock(ctx context.Context) (BucketLock, error) {
	enabled, mode, validity, unit, err := s.client.GetObjectLockConfig(ctx, s.bucket)
	if resp := (minio.ErrorResponse{}); errors.As(err, &resp) && resp.Code == "ObjectLockConfigurationNotFoundError" {
		return BucketLock{}, nil
	}
	if err != nil {
		return BucketLock{}, translateError("get object lock configuration of", s.bucket, err)
	}
	bl := BucketLock{Enabled: enabled == "Enabled"}
	if mode != nil && *mode != "" && validity != nil {
		bl.DefaultMode, bl.DefaultDays = LockMode(*mode), int(*validity)
		if unit != nil && *unit == minio.Years {
			bl.DefaultDays *= 365
		}
	}
	return bl, nil
}

// Retention reads the x-amz-object-lock-mode and -retain-until-date
// headers of a HEAD of the object (S3 API Reference, HeadObject: sent to
// callers with s3:GetObjectRetention). GetObjectRetention is not used:
// versitygw v1.8.0 answers it with an <ObjectLockRetention> document,
// which minio-go refuses (it wants <Retention>, as AWS sends).
func (s *s3Store) Retention(ctx context.Context, key string) (Retention, error) {
	if err := checkKey(ctx, key); err != nil {
		return Retention{}, err
	}
	_, ret, err := s.versionRetention(ctx, key, "")
	if errors.Is(err, ErrObjectNotFound) && s.readsThrough(ctx) {
		if _, hret, herr := s.hiddenVersion(ctx, key); herr == nil {
			return hret, nil
		}
	}
	return ret, err
}

// Retain sends PutObjectRetention; S3 refuses to shorten a retention
// (403), so a refusal is checked against the current retention: one that
// already holds until r.Until or later is success.
func (s *s3Store) Retain(ctx context.Context, key string, r Retention) error {
	if err := checkKey(ctx, key); err != nil {
		return err
	}
	r.Until = ceilSecond(r.Until.UTC())
	mode, until := minio.RetentionMode(r.Mode), r.Until
	opts := minio.PutObjectRetentionOptions{Mode: &mode, RetainUntilDate: &until}
	err := translateError("put retention", key, s.client.PutObjectRetention(ctx, s.bucket, s.prefix+key, opts))
	if err != nil && !errors.Is(err, ErrAccessDenied) && s.readsThrough(ctx) {
		// The current version may be a delete marker over the version
		// Stat and Get read through to (s3_hidden.go): extend that one.
		if v, _, herr := s.hiddenVersion(ctx, key); herr == nil {
			opts.VersionID = v.VersionID
			err = translateError("put retention", key, s.client.PutObjectRetention(ctx, s.bucket, s.prefix+key, opts))
		}
	}
	if !errors.Is(err, ErrAccessDenied) {
		return err
	}
	cur, cerr := s.Retention(ctx, key)
	if cerr != nil {
		return err
	}
	if cur.Covers(r) {
		return nil
	}
	return fmt.Errorf("%w (it holds %s until %s)", ErrObjectLocked, cur.Mode, cur.Until.Format("2006-01-02T15:04:05Z"))
}
