package volume

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// Class is what kind of failure an error is, decided once from the
// sentinels it wraps (Classify). The retry logic (Permanent, Manager.Restore)
// and pkg/driver's one mapping per RPC family to gRPC codes both read it;
// a failed upload's record keeps it (Record.UploadClass). The values are
// stored in lvol labels and must not change.
type Class string

// The classes, with the code pkg/driver answers for each (CSI spec "Error
// Scheme").
const (
	ClassNone        Class = ""             // no error
	ClassBusy        Class = "busy"         // held by another operation, a chain change not safe now: Aborted
	ClassUnreachable Class = "unreachable"  // the target cannot be reached now (Unreachable): Unavailable
	ClassTooLarge    Class = "too-large"    // the volume outgrew its chain: FailedPrecondition, permanent
	ClassOwned       Class = "owned"        // another cluster's chain: FailedPrecondition, permanent
	ClassRetained    Class = "retained"     // deleting a backup under Object Lock retention, until its date: FailedPrecondition
	ClassUntracked   Class = "untracked"    // no changed block tracking for a snapshot pair (ErrNoDelta): FailedPrecondition
	ClassInvalid     Class = "invalid"      // bad reference, target, secret, chain, key, option: InvalidArgument, permanent
	ClassNotFound    Class = "not-found"    // no such backup or lvol: NotFound
	ClassDenied      Class = "denied"       // the target refuses access: PermissionDenied, permanent
	ClassDamaged     Class = "damaged"      // a broken chain, corrupt block or manifest, an object too large: FailedPrecondition
	ClassOutOfRange  Class = "out-of-range" // a size outside what is allowed (a destination smaller than the backup): OutOfRange
	ClassExists      Class = "exists"       // the lvol exists: AlreadyExists
	ClassNoSpace     Class = "no-space"     // the pool (or a write) is out of space: ResourceExhausted
	ClassCanceled    Class = "canceled"     // the caller's context was cancelled: Canceled
	ClassDeadline    Class = "deadline"     // the caller's deadline passed: DeadlineExceeded
	ClassInternal    Class = "internal"     // anything else: Internal
)

// The classes of a volume's state on its node (node_errors.go).
const (
	ClassPrecondition Class = "precondition" // not in the state the call needs (not staged, in use, another filesystem): FailedPrecondition
	ClassUnavailable  Class = "unavailable"  // cannot serve the call yet (a restore still fills it): Unavailable
	// ClassElsewhere: the request's topology excludes this node, or its
	// source lives in another node's pool: ResourceExhausted (CSI spec
	// "CreateVolume Errors", "CreateSnapshot Errors": unable to provision
	// in the accessible topology), on which external-provisioner gives the
	// claim back to the scheduler.
	ClassElsewhere Class = "elsewhere"
)

// classes is the one ordered table of sentinels: the first row whose test
// err satisfies decides. Order matters where one sentinel wraps another
// (s3chain.ErrVolumeTooLarge wraps ErrInvalidOptions) or an error wraps
// two (an unreachable target is never permanent, whatever else it wraps).
var classes = []struct {
	class Class
	is    func(error) bool
}{
	// A node's sentinels first: each is the node's decision about its
	// cause (a failed mount whose cause wraps ENOSPC is still internal).
	{ClassInternal, isAny(ErrNodeFailed)},
	{ClassPrecondition, isAny(ErrNotStaged, ErrInUse, ErrIncompatible, ErrPoolNotReady)},
	{ClassExists, isAny(ErrMountConflict)},
	{ClassUnavailable, isAny(ErrRestoring, ErrHydrating)},
	{ClassBusy, isAny(ErrFrozen)},
	{ClassNotFound, isAny(ErrNotAtPath)},
	{ClassBusy, isAny(ErrBusy)},
	{ClassUnreachable, Unreachable},
	{ClassTooLarge, isAny(s3chain.ErrVolumeTooLarge)},
	{ClassOwned, isAny(s3chain.ErrChainOwned)},
	{ClassRetained, isAny(s3chain.ErrRetained)},
	{ClassUntracked, isAny(ErrNoDelta)},
	{ClassInvalid, isAny(target.ErrBadRef, target.ErrUnknownTarget, target.ErrBadSecret, s3chain.ErrInvalidChain,
		store.ErrBadTarget, s3chain.ErrWrongKey, s3chain.ErrInvalidOptions)},
	{ClassNotFound, isAny(s3chain.ErrBackupNotFound, ErrNoBackup)},
	{ClassDenied, isAny(store.ErrAccessDenied)},
	{ClassDamaged, isAny(s3chain.ErrChainBroken, s3chain.ErrCorruptBlock, s3chain.ErrFormatVersion,
		s3chain.ErrInvalidManifest)},
	{ClassOutOfRange, isAny(s3chain.ErrDestinationTooSmall)},
	{ClassBusy, isAny(s3chain.ErrChainBusy, s3chain.ErrLeaseLost)},
	{ClassDamaged, isAny(store.ErrObjectTooLarge)},
	{ClassNotFound, isAny(backend.ErrNotFound)},
	{ClassExists, isAny(backend.ErrExists)},
	{ClassNoSpace, isAny(backend.ErrNoSpace, syscall.ENOSPC)},
	{ClassInvalid, isAny(backend.ErrInvalid)},
	{ClassCanceled, isAny(context.Canceled)},
	{ClassDeadline, isAny(context.DeadlineExceeded)},
}

// isAny tests an error for any of the sentinels.
func isAny(sentinels ...error) func(error) bool {
	return func(err error) bool {
		for _, s := range sentinels {
			if errors.Is(err, s) {
				return true
			}
		}
		return false
	}
}

// Classify returns err's class: a refusal's own (Refuse), else the first
// row of classes err matches; ClassNone for nil, ClassInternal for an
// error that wraps no known sentinel.
func Classify(err error) Class {
	if err == nil {
		return ClassNone
	}
	if c, ok := refusalClass(err); ok {
		return c
	}
	for _, c := range classes {
		if c.is(err) {
			return c.class
		}
	}
	return ClassInternal
}

// Permanent reports whether errors of class c are ones a retry cannot fix:
// bad input (ClassInvalid, which holds backend.ErrInvalid), a refused access,
// a volume its chain cannot hold, another cluster's chain.
func (c Class) Permanent() bool {
	switch c {
	case ClassInvalid, ClassDenied, ClassTooLarge, ClassOwned:
		return true
	}
	return false
}

// Unreachable reports whether err says the backup target could not be
// reached or answered "try later": store.ErrTransient (throttling, 5xx,
// network, after the store's own retries), or a network error the store
// did not classify (connection refused or reset, a dial or I/O timeout).
// A cancelled or expired request context is not: it is the caller's.
func Unreachable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	return errors.Is(err, store.ErrTransient) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// legacyCodeClass reads the gRPC code name an older driver recorded for a
// failed upload (label backupCode) as the class it was mapped from, so that
// its next answer keeps its code.
func legacyCodeClass(code string) Class {
	switch code {
	case "":
		return ClassNone
	case "Unavailable":
		return ClassUnreachable
	case "ResourceExhausted":
		return ClassNoSpace
	case "InvalidArgument":
		return ClassInvalid
	case "FailedPrecondition":
		return ClassDamaged
	case "Aborted":
		return ClassBusy
	case "NotFound":
		return ClassNotFound
	case "PermissionDenied":
		return ClassDenied
	case "OutOfRange":
		return ClassOutOfRange
	}
	return ClassInternal
}
