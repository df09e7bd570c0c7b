package driver

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
	"github.com/chainvol/chainvol/pkg/volume"
)

// ParamBlockSize is the VolumeSnapshotClass parameter that sets the block
// size of a chain: a Kubernetes quantity ("1Mi", "4Mi", "262144"), a
// multiple of 4 KiB from 64 KiB to 64 MiB (FORMAT.md §3). It applies when
// the chain's first backup is made and is fixed from then on: a backup
// asking another size for an existing chain is InvalidArgument naming the
// chain's. It bounds the chain's volumes: at most s3chain.MaxBlocks blocks
// (64 GiB at 64Ki blocks; checkChainFits, ControllerExpandVolume). Smaller blocks make incrementals of scattered small changes
// smaller (docs/BENCHMARKS.md measures it) at the price of more objects
// and requests per byte. Absent: the chain's size, or for a new chain
// s3chain.DefaultBlockSize.
const ParamBlockSize = "blockSize"

// parseBlockSize validates a blockSize parameter value and returns bytes.
// Errors: InvalidArgument saying what is allowed.
func parseBlockSize(v string) (int64, error) {
	q, err := resource.ParseQuantity(v)
	n, ok := q.AsInt64()
	if err != nil || !ok || n < s3chain.MinBlockSize || n > s3chain.MaxBlockSize || n%4096 != 0 {
		return 0, status.Errorf(codes.InvalidArgument, "parameter %s %q must be a multiple of 4Ki from 64Ki to 64Mi (e.g. \"1Mi\")", ParamBlockSize, v)
	}
	return n, nil
}

// checkChainFits refuses, before any snapshot is taken, a backup of a
// volume of size bytes asking block size bs (bytes, 0 for none) that its
// chain can never take: InvalidArgument when bs differs from the block
// size of the chain (its config: fixed by its first backup) or is too
// small for the volume of a new chain; FailedPrecondition (errChainFull)
// when the volume has outgrown the chain (or is larger than any chain
// holds: 64 TiB at 64 MiB blocks), so that no snapshot lvol is
// taken, and none piles up, for an upload that would fail for good. A
// chain without a config takes bs, or newChainBlockSize's choice.
func checkChainFits(ctx context.Context, repo *s3chain.Repo, ref target.Ref, bs, size int64) error {
	cbs, err := repo.ChainBlockSize(ctx, ref.Chain)
	switch {
	case errors.Is(err, s3chain.ErrBackupNotFound) && bs != 0 && size > s3chain.MaxVolumeSize(bs):
		return status.Errorf(codes.InvalidArgument, "parameter %s %s holds volumes up to %d bytes (%d blocks), but volume of chain %q has %d; ask for a larger block size",
			ParamBlockSize, volume.Quantity(bs), s3chain.MaxVolumeSize(bs), s3chain.MaxBlocks, ref.Chain, size)
	case errors.Is(err, s3chain.ErrBackupNotFound) && size > s3chain.MaxVolumeSize(s3chain.MaxBlockSize):
		return status.Errorf(codes.FailedPrecondition, "a volume of %d bytes is larger than any backup chain holds: %d bytes (%d blocks of the largest block size, %s)",
			size, s3chain.MaxVolumeSize(s3chain.MaxBlockSize), s3chain.MaxBlocks, volume.Quantity(s3chain.MaxBlockSize))
	case errors.Is(err, s3chain.ErrBackupNotFound):
		return nil
	case err != nil:
		return snapshotError("read the chain's block size", err)
	case bs != 0 && bs != cbs:
		return status.Errorf(codes.InvalidArgument, "parameter %s is %d bytes but chain %q has block size %d bytes (%s), fixed by its first backup; use %s: %q or a new chain",
			ParamBlockSize, bs, ref.Chain, cbs, volume.Quantity(cbs), ParamBlockSize, volume.Quantity(cbs))
	case size > s3chain.MaxVolumeSize(cbs):
		return snapshotError("", volume.ChainFull(volume.ClassTooLarge, ref.Chain, size, cbs))
	}
	return nil
}
