package s3chain

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/minio/minio-go/v7"
)

// translateError turns a minio-go error from operation op on key into the
// store's sentinel errors, once, in the manner of kopia's translateError:
//
//	NoSuchKey, 404 on an object            -> ErrObjectNotFound
//	AccessDenied, InvalidAccessKeyId,
//	SignatureDoesNotMatch, 403             -> ErrAccessDenied
//	(and versitygw's XAdminUserNotFound)
//	NoSuchBucket, InvalidBucketName        -> ErrBadTarget
//	SlowDown and other throttling codes,
//	408, 429, 5xx, network errors          -> ErrTransient
//
// Codes are those of the S3 API Reference, "Error responses". The original
// error stays wrapped too, for its message and request id. Context
// cancellation is returned as ctx's own error. nil stays nil.
func translateError(op, key string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("s3 %s %q: %w", op, key, err)
	}
	if sentinel := classifyS3Error(err); sentinel != nil {
		return fmt.Errorf("s3 %s %q: %w: %w", op, key, sentinel, err)
	}
	return fmt.Errorf("s3 %s %q: %w", op, key, err)
}

// classifyS3Error returns the sentinel for err, or nil when it has none
// (a permanent error the store cannot name, such as a malformed request).
func classifyS3Error(err error) error {
	var resp minio.ErrorResponse
	if !errors.As(err, &resp) {
		// Not an S3 answer: the request never got one (refused connection,
		// reset, timeout, DNS). Worth another try.
		return ErrTransient
	}
	switch resp.Code {
	case "NoSuchKey":
		return ErrObjectNotFound
	// versitygw answers an unknown key id with 404 XAdminUserNotFound
	// where AWS answers 403 InvalidAccessKeyId.
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken",
		"XAdminUserNotFound":
		return ErrAccessDenied
	case "NoSuchBucket", "InvalidBucketName":
		return ErrBadTarget
	case "SlowDown", "SlowDownRead", "SlowDownWrite", "Throttling", "ThrottlingException",
		"RequestLimitExceeded", "RequestThrottled", "RequestTimeout", "InternalError", "ServiceUnavailable":
		return ErrTransient
	}
	switch s := resp.StatusCode; {
	case s == http.StatusNotFound:
		return ErrObjectNotFound
	case s == http.StatusForbidden:
		return ErrAccessDenied
	case s == http.StatusRequestTimeout, s == http.StatusTooManyRequests, s >= 500:
		return ErrTransient
	}
	return nil
}
