package driver

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// ParamBlockSize is the VolumeSnapshotClass parameter that sets the block
// size of a chain: a Kubernetes quantity ("1Mi", "4Mi", "262144"), a
// multiple of 4 KiB from 64 KiB to 64 MiB (FORMAT.md §3). It applies when
// the chain's first backup is made and is fixed from then on: a backup
// asking another size for an existing chain is InvalidArgument naming the
// chain's. Smaller blocks make incrementals of scattered small changes
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

// checkChainBlockSize refuses a backup asking block size bs (bytes, 0 for
// none) of a chain whose backups have another: InvalidArgument naming the
// chain's, before any snapshot is taken. A chain without backups takes bs.
func checkChainBlockSize(ctx context.Context, repo *s3chain.Repo, ref target.Ref, bs int64) error {
	if bs == 0 {
		return nil
	}
	m, err := repo.Manifest(ctx, ref.Chain, target.Latest)
	if errors.Is(err, s3chain.ErrBackupNotFound) {
		return nil
	}
	if err != nil {
		return snapshotError("read the chain's block size", err)
	}
	if m.BlockSize != bs {
		return status.Errorf(codes.InvalidArgument, "parameter %s is %d bytes but chain %q has block size %d bytes (%s), fixed by its first backup; use %s: %q or a new chain",
			ParamBlockSize, bs, ref.Chain, m.BlockSize, quantity(m.BlockSize), ParamBlockSize, quantity(m.BlockSize))
	}
	return nil
}

// quantity prints bytes as a Kubernetes quantity ("4Mi").
func quantity(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}
