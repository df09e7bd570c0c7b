package store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/minio/minio-go/v7"
)

// translateError turns a minio-go error from operation op on key into the
// store's sentinel errors, once, in the manner of kopia's translateError:
//
//	NoSuchKey, 404 on an object            -> ErrObjectNotFound
//	AccessDenied, InvalidAccessKeyId,
//	SignatureDoesNotMatch, 403             -> ErrAccessDenied
//	(and versitygw's XAdminUserNotFound)
//	AccessDenied "...object lock..."       -> ErrObjectLocked (also ErrAccessDenied)
//	NoSuchBucket                           -> ErrNoBucket (an ErrBadTarget)
//	InvalidBucketName, untrusted TLS       -> ErrBadTarget
//	HTTP answer to HTTPS (no S3 answer)    -> ErrPlainHTTP (an ErrBadTarget)
//	PreconditionFailed, 412                -> ErrObjectExists
//	(only PutIfAbsent sends a precondition, If-None-Match: *)
//	SlowDown and other throttling codes,
//	408, 429, 5xx but 501, network errors,
//	ConditionalRequestConflict (409)       -> ErrTransient
//	NotImplemented (501)                   -> none: it will not pass
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
		if untrustedTLS(err) { // no retry makes a certificate trusted (auth.go)
			return ErrBadTarget
		}
		// net/http has no error type for it, only this text
		// (net/http/transport.go); no retry makes the server speak TLS.
		if strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
			return ErrPlainHTTP
		}
		// Not an S3 answer: the request never got one (refused connection,
		// reset, timeout, DNS). Worth another try.
		return ErrTransient
	}
	switch resp.Code {
	case "AccessDenied":
		// A locked object's refusal is a 403 AccessDenied too; only the
		// message tells (AWS and versitygw: "...object lock...").
		if strings.Contains(strings.ToLower(resp.Message), "object lock") {
			return ErrObjectLocked
		}
		return ErrAccessDenied
	case "NoSuchKey":
		return ErrObjectNotFound
	// versitygw answers an unknown key id with 404 XAdminUserNotFound
	// where AWS answers 403 InvalidAccessKeyId.
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken",
		"XAdminUserNotFound":
		return ErrAccessDenied
	case "NoSuchBucket":
		return ErrNoBucket
	case "InvalidBucketName":
		return ErrBadTarget
	case "PreconditionFailed":
		return ErrObjectExists
	case "NotImplemented":
		return nil
	case "SlowDown", "SlowDownRead", "SlowDownWrite", "Throttling", "ThrottlingException",
		"RequestLimitExceeded", "RequestThrottled", "RequestTimeout", "InternalError", "ServiceUnavailable",
		// AWS: a conditional write raced another write of the key; retry.
		"ConditionalRequestConflict":
		return ErrTransient
	}
	switch s := resp.StatusCode; {
	case s == http.StatusNotFound:
		return ErrObjectNotFound
	case s == http.StatusForbidden:
		return ErrAccessDenied
	case s == http.StatusPreconditionFailed:
		return ErrObjectExists
	case s == http.StatusNotImplemented:
		return nil
	case s == http.StatusRequestTimeout, s == http.StatusTooManyRequests, s >= 500:
		return ErrTransient
	}
	return nil
}
