package volume

import (
	"errors"
	"fmt"

	"github.com/chainvol/chainvol/internal/trylock"
	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

// Sentinel errors of this package, returned wrapped (test with errors.Is).
// The CSI shell (pkg/driver) maps each to a gRPC code in one function per
// RPC family; this package knows no gRPC.
var (
	// ErrNotReady: the volume exists but a restore is still filling it.
	// It wraps backend.ErrNotFound: to every caller that does not ask for
	// it, a volume being restored does not exist yet (CSI: NotFound; the
	// node answers Unavailable, retry later).
	ErrNotReady = fmt.Errorf("%w: the volume is still being restored", backend.ErrNotFound)
	// ErrHydrating: an instant restore's background job still fills the
	// volume (PhaseHydrating). Its node serves it, but a snapshot, backup,
	// clone or expansion of it waits until hydration ends: a reflink of
	// its data file would copy holes where blocks are not fetched yet, and
	// the image it is served through has the backup's size, fixed
	// (ClassUnavailable: the CO retries).
	ErrHydrating = errors.New("the volume is still being hydrated from its backup (instant restore); retry when hydration has finished")
	// ErrBusy: another operation holds the volume, snapshot or name
	// (CSI spec "Concurrency": Aborted, the CO retries): the try-locks'
	// refusal (trylock.Busy wraps it).
	ErrBusy = trylock.ErrBusy
	// ErrNoDelta: no changed block tracking can compare the two snapshots
	// (CSI spec "GetMetadataDelta Errors": FailedPrecondition, make a full
	// copy instead): a local snapshot known by no digest beside a backup,
	// or a pool without reflinks, whose snapshots share no extent.
	ErrNoDelta = errors.New("changed block tracking cannot compare these snapshots")
)

// Permanent reports whether err is one a retry cannot fix
// (Classify(err).Permanent()): a bad reference, target, secret, chain name,
// key or option, a refused access, an invalid pool request, another
// cluster's chain, a volume its chain cannot hold. A target that could not
// be reached (Unreachable) never is.
func Permanent(err error) bool { return Classify(err).Permanent() || Final(err) }

// Final reports whether err fails a backup upload for good: the snapshot
// is larger than its chain holds (s3chain.ErrVolumeTooLarge: the chain's
// block size is fixed by its first backup), its chain name is invalid, or
// its backup id is taken (s3chain.ErrBackupExists: in a chain with state
// records an id whose manifest was voided, by a gc after the upload was
// left unready longer than its min-age, or deleted, is never committed
// again, FORMAT.md §7.5; the snapshot id that names it is fixed).
// Neither a retry nor a change to the target or its credentials can ever
// upload that snapshot into that chain, so the driver records the upload
// UploadRefused and never restarts it. Every Final error is Permanent; the
// other Permanent errors (access denied, a wrong key) end one upload's
// attempts but not its retries by later calls, since an operator can fix
// them.
func Final(err error) bool {
	return errors.Is(err, s3chain.ErrVolumeTooLarge) || errors.Is(err, s3chain.ErrInvalidChain) ||
		errors.Is(err, s3chain.ErrBackupExists)
}
