// Package volume is the volume lifecycle between the CSI shell
// (pkg/driver) and the stores (pkg/backend, pkg/s3chain): what the driver
// records on each lvol (Record, whose codec is the only code touching lvol
// labels), the backup snapshot id codec (backupid.go), and the Manager that
// owns the state beside the records: background jobs and their final
// errors, per-chain locks, checkpoint and image record
// paths, and the index from backup snapshot id to local snapshot.
//
// It returns sentinel errors (errors.go, and those of pkg/backend and
// pkg/s3chain), never gRPC statuses; pkg/driver maps them to codes.
// docs/ARCHITECTURE.md draws the floors.
package volume
