package driver

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/internal/trylock"
	"github.com/chainvol/chainvol/pkg/volume"
)

// Where errors become codes. The stores and pkg/volume return sentinel
// errors (backend.Err*, s3chain.Err*, target.Err*, volume.Err*); each RPC
// family maps them with one function: volumeError (controller volume RPCs:
// CreateVolume ... ControllerExpandVolume, capacity, health), snapshotError
// (CreateSnapshot ... ListSnapshots, group snapshots), metadataError
// (SnapshotMetadata) and nodeError (node RPCs). A status made earlier
// (request validation, a rule with its own message) passes through them
// unchanged.

// volumeError is the status of err in a controller volume RPC: familyCode
// (a volume a restore still fills, volume.ErrNotReady, is NotFound: it does
// not exist yet). doing says what failed ("volume vol-…").
func volumeError(doing string, err error) error { return toStatus(doing, err, familyCode) }

// snapshotError is the status of err in a snapshot RPC: familyCode (a
// snapshot id that names nothing, errNoSnapshot, is NotFound).
func snapshotError(doing string, err error) error { return toStatus(doing, err, familyCode) }

// metadataError is the status of err in a SnapshotMetadata RPC
// (snapshot_metadata.go): familyCode (CSI spec "GetMetadataAllocated
// Errors", "GetMetadataDelta Errors": a snapshot that does not exist is
// NotFound, a pair without changed block tracking, volume.ErrNoDelta,
// FailedPrecondition, a starting_offset past the volume OutOfRange).
func metadataError(doing string, err error) error { return toStatus(doing, err, familyCode) }

// nodeError is the status of err in a node RPC: familyCode. (A volume a
// restore still fills is refused by stageable with Unavailable first.)
func nodeError(doing string, err error) error { return toStatus(doing, err, familyCode) }

// familyCode is the code every family shares: the class of err
// (volume.Classify, the one classification of sentinels) as classCode maps
// it. volume.ErrNotReady wraps backend.ErrNotFound: NotFound.
func familyCode(err error) codes.Code { return classCode(volume.Classify(err)) }

// classCodes are the codes of the classes (CSI spec "Error Scheme"): what the
// user must fix is InvalidArgument, what is missing NotFound, damaged
// backups, another cluster's chain and a volume larger than its chain
// holds FailedPrecondition (final: retrying cannot heal them; a new chain
// can hold the volume), as is deleting a backup under Object Lock
// retention (until its date), a target that cannot be reached right now
// Unavailable, a name held or a chain change that cannot be made safely
// right now Aborted (both retryable: the spec leaves transient failures to
// gRPC's codes). A volume not in the state a call needs (not staged, in
// use, another filesystem: volume.ErrNotStaged, ...) is FailedPrecondition,
// one a restore still fills at the node Unavailable. What only another
// node can make (a topology that excludes this node, a clone of another
// node's volume: volume.ClassElsewhere) is ResourceExhausted.
var classCodes = map[volume.Class]codes.Code{
	volume.ClassNone:         codes.OK,
	volume.ClassBusy:         codes.Aborted,
	volume.ClassUnreachable:  codes.Unavailable,
	volume.ClassTooLarge:     codes.FailedPrecondition,
	volume.ClassOwned:        codes.FailedPrecondition,
	volume.ClassRetained:     codes.FailedPrecondition,
	volume.ClassUntracked:    codes.FailedPrecondition,
	volume.ClassInvalid:      codes.InvalidArgument,
	volume.ClassNotFound:     codes.NotFound,
	volume.ClassDenied:       codes.PermissionDenied,
	volume.ClassDamaged:      codes.FailedPrecondition,
	volume.ClassOutOfRange:   codes.OutOfRange,
	volume.ClassExists:       codes.AlreadyExists,
	volume.ClassNoSpace:      codes.ResourceExhausted,
	volume.ClassCanceled:     codes.Canceled,
	volume.ClassDeadline:     codes.DeadlineExceeded,
	volume.ClassPrecondition: codes.FailedPrecondition,
	volume.ClassUnavailable:  codes.Unavailable,
	volume.ClassElsewhere:    codes.ResourceExhausted,
}

// classCode is the code of class c; a class without one is Internal.
func classCode(c volume.Class) codes.Code {
	if code, ok := classCodes[c]; ok {
		return code
	}
	return codes.Internal
}

// toStatus passes a status through and maps anything else with code, the
// message starting with what was being done (none when doing is "").
func toStatus(doing string, err error, code func(error) codes.Code) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	if doing == "" {
		return status.Error(code(err), err.Error())
	}
	return status.Errorf(code(err), "%s: %v", doing, err)
}

// errBusy is the answer when another operation holds the same key
// (CSI spec "Concurrency": Aborted, the CO retries).
func errBusy(key string) error { return volumeError("", trylock.Busy(key)) }
