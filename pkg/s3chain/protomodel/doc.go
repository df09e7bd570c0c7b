// Package protomodel is a small-scope model checker for the chain protocol
// of pkg/s3chain (docs/FORMAT.md §7, issue 24). It does not import
// pkg/s3chain: it models the protocol abstractly, over an abstract object
// store whose every request is split into an issue step (the actor decided
// and sent it) and a landing step (the store applies it and answers), with
// anything else, including time, allowed to happen in between.
//
// Two protocols are modelled: v2 (leases decide safety, the protocol the
// old code implements) and v3 (doom records and a confirm phase decide
// safety, leases only progress; /work/notes/protocol-v3.md). A depth-first
// search with a visited set of state hashes explores every schedule of a
// Scope and checks in every reachable state that each backup reported
// ready and not deleted restores: its manifest exists, every digest it
// lists has an existing block key, and its config is the one it was signed
// with. docs/PROTOCOL-MODEL.md says what is modelled and what is not.
package protomodel
