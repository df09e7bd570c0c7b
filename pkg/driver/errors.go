package driver

import (
	"context"
	"errors"
	"syscall"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
	"github.com/chainvol/chainvol/pkg/volume"
)

// Where errors become codes. The stores and pkg/volume return sentinel
// errors (backend.Err*, s3chain.Err*, target.Err*, volume.Err*); each RPC
// family maps them with one function: volumeError (controller volume RPCs:
// CreateVolume ... ControllerExpandVolume, capacity, health), snapshotError
// (CreateSnapshot ... ListSnapshots, group snapshots) and nodeError (node
// RPCs). A status made earlier (request validation, a rule with its own
// message) passes through them unchanged.

// volumeError is the status of err in a controller volume RPC: familyCode
// (a volume a restore still fills, volume.ErrNotReady, is NotFound: it does
// not exist yet). doing says what failed ("volume vol-…").
func volumeError(doing string, err error) error { return toStatus(doing, err, familyCode) }

// snapshotError is the status of err in a snapshot RPC: a snapshot id that
// names nothing is NotFound, else as volumeError.
func snapshotError(doing string, err error) error {
	return toStatus(doing, err, func(err error) codes.Code {
		if errors.Is(err, errNoSnapshot) {
			return codes.NotFound
		}
		return familyCode(err)
	})
}

// nodeError is the status of err in a node RPC: familyCode. (A volume a
// restore still fills is refused by stageable with Unavailable first.)
func nodeError(doing string, err error) error { return toStatus(doing, err, familyCode) }

// familyCode is the code every family shares: Aborted for volume.ErrBusy,
// else chainCode (which falls back to poolCode; volume.ErrNotReady wraps
// backend.ErrNotFound).
func familyCode(err error) codes.Code {
	if errors.Is(err, volume.ErrBusy) {
		return codes.Aborted
	}
	return chainCode(err)
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

// poolCode maps a pool error to the gRPC code the CSI spec asks for; the
// caller chooses the message. Unknown errors are Internal.
func poolCode(err error) codes.Code {
	switch {
	case errors.Is(err, backend.ErrNotFound):
		return codes.NotFound
	case errors.Is(err, backend.ErrExists):
		return codes.AlreadyExists
	case errors.Is(err, backend.ErrNoSpace), errors.Is(err, syscall.ENOSPC):
		return codes.ResourceExhausted
	case errors.Is(err, backend.ErrInvalid):
		return codes.InvalidArgument
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	}
	return codes.Internal
}

// errBusy is the answer when another operation holds the same key
// (CSI spec "Concurrency": Aborted, the CO retries).
func errBusy(key string) error {
	return status.Errorf(codes.Aborted, "an operation on %q is already in progress; retry later", key)
}

// chainCode maps backup target and chain errors to gRPC codes: what the
// user must fix is InvalidArgument, what is missing NotFound, damaged
// backups and a volume larger than its chain holds FailedPrecondition
// (final: retrying cannot heal them; a new chain can hold the volume), as
// is deleting a backup under Object Lock retention (until its date), a target
// that cannot be reached right now Unavailable, a chain change that cannot
// be made safely right now Aborted (both retryable; CSI spec "Error
// Scheme" leaves transient failures to gRPC's codes).
func chainCode(err error) codes.Code {
	switch {
	case volume.Unreachable(err):
		return codes.Unavailable
	case errors.Is(err, s3chain.ErrVolumeTooLarge): // before ErrInvalidOptions, which it wraps
		return codes.FailedPrecondition
	case errors.Is(err, s3chain.ErrChainOwned): // another cluster's chain: a takeover or another target prefix
		return codes.FailedPrecondition
	case errors.Is(err, s3chain.ErrRetained): // under Object Lock until the date the message names
		return codes.FailedPrecondition
	case errors.Is(err, target.ErrBadRef), errors.Is(err, target.ErrUnknownTarget), errors.Is(err, target.ErrBadSecret),
		errors.Is(err, s3chain.ErrInvalidChain), errors.Is(err, store.ErrBadTarget), errors.Is(err, s3chain.ErrWrongKey),
		errors.Is(err, s3chain.ErrInvalidOptions):
		return codes.InvalidArgument
	case errors.Is(err, s3chain.ErrBackupNotFound):
		return codes.NotFound
	case errors.Is(err, store.ErrAccessDenied):
		return codes.PermissionDenied
	case errors.Is(err, s3chain.ErrChainBroken), errors.Is(err, s3chain.ErrCorruptBlock),
		errors.Is(err, s3chain.ErrFormatVersion), errors.Is(err, s3chain.ErrInvalidManifest):
		return codes.FailedPrecondition
	case errors.Is(err, s3chain.ErrDestinationTooSmall):
		return codes.OutOfRange
	case errors.Is(err, s3chain.ErrChainBusy), errors.Is(err, s3chain.ErrLeaseLost):
		return codes.Aborted
	case errors.Is(err, store.ErrObjectTooLarge):
		return codes.FailedPrecondition
	}
	return poolCode(err)
}
