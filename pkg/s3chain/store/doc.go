// Package store is where the objects of backup chains live: the Store
// interface (a flat key/value object store with atomic Put and
// create-if-absent PutIfAbsent, bounded reads, lexical List), its two
// implementations, an S3 bucket prefix through minio-go (s3.go) and a local
// directory (file.go), the retry layer for transient faults (retry.go),
// target URL parsing and credentials (open.go, auth.go), and the object key
// rules (key.go). Open is the entry point: it turns a backup target URL
// (file:///DIR or s3://BUCKET/PREFIX?...) into a Store.
//
// It knows nothing of the chain format: pkg/s3chain builds chains on top of
// a Store, and pkg/s3chain/storetest holds the conformance suite every Store
// implementation passes (here: file, S3 on versitygw, S3 without
// conditional writes; there: the in-memory and fault-injecting stores).
// Errors are the sentinels in store.go, wrapped with %w.
package store
