// Package storetest holds test helpers for s3chain.Store implementations:
// RunSuite, the one conformance suite every Store must pass; NewMem, an
// in-memory Store for quick unit tests; and NewFaulty, a fault-injecting
// wrapper for engine tests (fail the Nth operation, fail keys matching a
// predicate, corrupt returned bytes, count Gets per key), in the manner of
// kopia's blobtesting and FaultyStorage. It must never be imported by
// non-test code.
package storetest
