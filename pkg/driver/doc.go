// Package driver implements chainvol's CSI Identity, Controller and Node
// services (CSI spec v1.13) over a node-local lvol pool (pkg/backend).
//
// One driver instance runs per node (a DaemonSet beside an external-provisioner
// in node-deployment mode), so the controller service provisions from the
// local pool only and reports this node's topology segment.
//
// The servers (servers.go) are siblings: identity, controller (with its
// restorer), snapshotter, groups and node each hold the shared parts (core,
// which holds no server) and no server calls another's methods
// (siblings_test.go). Each RPC's locks are stated once (locks.go, rpcLocks),
// try-locks in the driver's own set (internal/trylock) that its
// volume.Manager shares.
//
// The package never logs secrets (requests are sanitized with csi-lib-utils'
// protosanitizer), never lets a request id reach a file path unvalidated, and
// never returns a non-status error to gRPC: every error is a sentinel
// (pkg/volume's, node ones included: volume.ErrNotStaged, ...) classified
// once (volume.Classify) and mapped to a code in errors.go, one function per
// RPC family; only request validation builds a status itself. What it records on lvols and the
// lifecycle state beside it (jobs, chain locks, checkpoints, the backup reference
// index) live in pkg/volume (docs/ARCHITECTURE.md).
package driver
