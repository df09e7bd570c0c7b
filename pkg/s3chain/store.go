package s3chain

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors of the object-store layer, wrapped with %w.
var (
	// ErrObjectNotFound: the key does not exist in the store (S3 NoSuchKey, ENOENT).
	ErrObjectNotFound = errors.New("object not found")
	// ErrAccessDenied: the credentials are missing or refused (S3 AccessDenied,
	// InvalidAccessKeyId, SignatureDoesNotMatch).
	ErrAccessDenied = errors.New("access to backup target denied")
	// ErrBadTarget: the target URL is malformed or names an unknown scheme,
	// or the bucket does not exist.
	ErrBadTarget = errors.New("invalid backup target")
	// ErrInvalidKey: an object key breaks the key rules of ValidateKey
	// (empty, absolute, "..", a character outside [A-Za-z0-9._/-]).
	ErrInvalidKey = errors.New("invalid object key")
	// ErrTransient: the target failed in a way that may pass on its own:
	// throttling (S3 SlowDown, HTTP 429/503), another 5xx, a network error
	// or timeout. The retry wrapper (NewRetryStore) retries these and only
	// these.
	ErrTransient = errors.New("backup target temporarily unavailable")
)

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	Key     string
	Size    int64 // bytes
	ModTime time.Time
}

// Store is a flat key/value object store: an S3 bucket prefix or a local
// directory, opened by OpenStore. Keys are slash-separated relative paths
// of [A-Za-z0-9._/-] (ValidateKey has the exact rule; every method returns
// ErrInvalidKey for a key that breaks it). A key should not also be a
// prefix of other keys ("a" and "a/b"): file stores cannot hold both.
// All methods honour ctx cancellation and then return an error wrapping
// ctx.Err(). Implementations are safe for concurrent use. Any method may
// fail with ErrTransient (throttling, 5xx, network), which the S3 store
// from OpenStore has already retried. storetest.RunSuite checks these
// rules for every implementation.
type Store interface {
	// Put stores data under key atomically: readers see the whole object or
	// none (S3 PutObject semantics; rename for files). Overwrites replace.
	Put(ctx context.Context, key string, data []byte) error
	// Get returns the whole object. Errors: ErrObjectNotFound.
	Get(ctx context.Context, key string) ([]byte, error)
	// Stat returns the object's info. Errors: ErrObjectNotFound.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// Delete removes the object; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List calls fn for every object whose key starts with prefix, in
	// lexical key order; an error from fn stops the listing and is returned.
	List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error
	// String returns the target URL without credentials, for logs.
	String() string
}

// Credentials authenticate to an S3 target. They are never logged.
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
}
