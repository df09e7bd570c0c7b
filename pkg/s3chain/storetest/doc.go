// Package storetest holds test helpers for store.Store implementations:
// RunSuite, the one conformance suite every Store must pass (with
// NoAtomicCreate for a store without conditional writes, which must pass
// the ErrNotAtomic fallback case instead); NewMem, an in-memory Store for
// quick unit tests; and NewFaulty, a fault-injecting wrapper for engine
// tests (fail the Nth operation, fail keys matching a predicate, delay
// calls, hold calls at a Gate between an actor's check and its effect and
// let them land late, step or skew the store's clock, lose the answer of a
// write, corrupt returned bytes, behave like a server without conditional
// writes, count Gets per key; View for one more client), in the manner
// of kopia's blobtesting and FaultyStorage. It must never be imported by
// non-test code.
package storetest
