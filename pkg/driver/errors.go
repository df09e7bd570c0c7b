package driver

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

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

// poolError wraps a pool error in a status with the mapped code and a
// message that starts with what was being done.
func poolError(doing string, err error) error {
	return status.Errorf(poolCode(err), "%s: %v", doing, err)
}

// errBusy is the answer when another operation holds the same key
// (CSI spec "Concurrency": Aborted, the CO retries).
func errBusy(key string) error {
	return status.Errorf(codes.Aborted, "an operation on %q is already in progress; retry later", key)
}

// chainCode maps backup target and chain errors to gRPC codes: what the
// user must fix is InvalidArgument, what is missing NotFound, damaged
// backups FailedPrecondition (final: retrying cannot heal them), a target
// that cannot be reached right now Unavailable, a chain change that cannot
// be made safely right now Aborted (both retryable; CSI spec "Error
// Scheme" leaves transient failures to gRPC's codes).
func chainCode(err error) codes.Code {
	switch {
	case unreachable(err):
		return codes.Unavailable
	case errors.Is(err, target.ErrBadRef), errors.Is(err, target.ErrUnknownTarget), errors.Is(err, target.ErrBadSecret),
		errors.Is(err, s3chain.ErrInvalidChain), errors.Is(err, s3chain.ErrBadTarget), errors.Is(err, s3chain.ErrWrongKey),
		errors.Is(err, s3chain.ErrInvalidOptions):
		return codes.InvalidArgument
	case errors.Is(err, s3chain.ErrBackupNotFound):
		return codes.NotFound
	case errors.Is(err, s3chain.ErrAccessDenied):
		return codes.PermissionDenied
	case errors.Is(err, s3chain.ErrChainBroken), errors.Is(err, s3chain.ErrCorruptBlock),
		errors.Is(err, s3chain.ErrFormatVersion), errors.Is(err, s3chain.ErrInvalidManifest):
		return codes.FailedPrecondition
	case errors.Is(err, s3chain.ErrTargetTooSmall):
		return codes.OutOfRange
	case errors.Is(err, s3chain.ErrChainBusy), errors.Is(err, s3chain.ErrLeaseLost):
		return codes.Aborted
	case errors.Is(err, s3chain.ErrObjectTooLarge):
		return codes.FailedPrecondition
	}
	return poolCode(err)
}

// chainError wraps a chain error in a status with the mapped code.
func chainError(doing string, err error) error {
	return status.Errorf(chainCode(err), "%s: %v", doing, err)
}

// unreachable reports whether err says the backup target could not be
// reached or answered "try later": s3chain.ErrTransient (throttling, 5xx,
// network, after the store's own retries), or a network error the store
// did not classify (connection refused or reset, a dial or I/O timeout).
// A cancelled or expired request context is not: it is the caller's.
func unreachable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	return errors.Is(err, s3chain.ErrTransient) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}
