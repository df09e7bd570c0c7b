package store

import (
	"context"
	"errors"
	"fmt"
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
	// ErrNoBucket: the target's bucket does not exist (S3 NoSuchBucket);
	// it is also ErrBadTarget. Open never creates one; CreateTarget does.
	ErrNoBucket = fmt.Errorf("%w: the bucket does not exist", ErrBadTarget)
	// ErrPlainHTTP: the endpoint answered an HTTPS request in plain HTTP,
	// so the URL lacks insecure=true; it is also ErrBadTarget.
	ErrPlainHTTP = fmt.Errorf("%w: the endpoint speaks plain HTTP", ErrBadTarget)
	// ErrInvalidKey: an object key breaks the key rules of ValidateKey
	// (empty, absolute, "..", a character outside [A-Za-z0-9._/-]).
	ErrInvalidKey = errors.New("invalid object key")
	// ErrTransient: the target failed in a way that may pass on its own:
	// throttling (S3 SlowDown, HTTP 429/503), another 5xx, a network error
	// or timeout. The retry wrapper (NewRetryStore) retries these and only
	// these.
	ErrTransient = errors.New("backup target temporarily unavailable")
	// ErrObjectExists: PutIfAbsent found the key already taken (S3 412
	// PreconditionFailed on If-None-Match: *; EEXIST from link(2)).
	ErrObjectExists = errors.New("object already exists")
	// ErrObjectTooLarge: an object is larger than the bound its reader
	// allows (GetMax); the message names the key, the size and the bound.
	ErrObjectTooLarge = errors.New("object larger than allowed")
	// ErrNotAtomic: the store cannot create-if-absent atomically, e.g. an
	// S3 server that ignores If-None-Match, or a filesystem without hard
	// links. PutIfAbsent returns it, consistently, without writing.
	ErrNotAtomic = errors.New("store has no atomic create")
)

// maxObjectSize bounds every object read, in bytes: 5 GiB, the largest
// single S3 PutObject (S3 User Guide, "Uploading objects"). Get reads with
// this bound; callers should pass GetMax a bound of their own, derived
// from what the object can legitimately hold.
const maxObjectSize = 5 << 30

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	Key     string
	Size    int64 // bytes
	ModTime time.Time
}

// Store is a flat key/value object store: an S3 bucket prefix or a local
// directory, opened by Open. Keys are slash-separated relative paths
// of [A-Za-z0-9._/-] (ValidateKey has the exact rule; every method returns
// ErrInvalidKey for a key that breaks it). A key should not also be a
// prefix of other keys ("a" and "a/b"): file stores cannot hold both.
// All methods honour ctx cancellation and then return an error wrapping
// ctx.Err(). Implementations are safe for concurrent use. Any method may
// fail with ErrTransient (throttling, 5xx, network), which the S3 store
// from Open has already retried. storetest.RunSuite checks these
// rules for every implementation.
type Store interface {
	// Put stores data under key atomically: readers see the whole object or
	// none (S3 PutObject semantics; rename for files). Overwrites replace.
	Put(ctx context.Context, key string, data []byte) error
	// Get returns the whole object; it is GetMax with a bound of 5 GiB.
	// Errors: ErrObjectNotFound, ErrObjectTooLarge.
	// To be removed: new code calls GetMax with a bound derived from what
	// the object may hold.
	Get(ctx context.Context, key string) ([]byte, error)
	// GetMax returns the whole object if it is at most maxBytes long
	// (maxBytes < 0 counts as 0). A larger object fails fast with
	// ErrObjectTooLarge, naming key, size and bound, and without reading
	// more than maxBytes+1 bytes into memory: the size the server
	// (Content-Length) or filesystem (fstat) reports is checked before
	// reading, and the read itself is capped in case that size was wrong.
	// The result is never nil, even for an empty object.
	// Errors: ErrObjectNotFound, ErrObjectTooLarge.
	GetMax(ctx context.Context, key string, maxBytes int64) ([]byte, error)
	// PutIfAbsent stores data under key only if no object has that key,
	// atomically against concurrent PutIfAbsent and Put of the same key:
	// of racing PutIfAbsent calls exactly one succeeds, and readers see
	// the whole object or none. Sources: S3 PutObject with If-None-Match: *
	// (AWS conditional writes, S3 User Guide "How to prevent object
	// overwrites with conditional writes"); for files, a fully written and
	// fsynced temporary file hard-linked to the final name (link(2) fails
	// with EEXIST when the name exists). Errors: ErrObjectExists (the
	// stored object is left as it was); ErrNotAtomic when the store cannot
	// guarantee it (nothing is written; the answer does not change for the
	// life of the store value).
	PutIfAbsent(ctx context.Context, key string, data []byte) error
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
