package driver

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/volume"
)

// ParamBlockSize is the VolumeSnapshotClass parameter that sets the block
// size of a chain: a Kubernetes quantity ("1Mi", "4Mi", "262144"), a
// multiple of 4 KiB from 64 KiB to 64 MiB (FORMAT.md §3). It applies when
// the chain's first backup is made and is fixed from then on: a backup
// asking another size for an existing chain is InvalidArgument naming the
// chain's. It bounds the chain's volumes: at most s3chain.MaxBlocks blocks
// (64 GiB at 64Ki blocks; volume.CheckChainFits, ControllerExpandVolume). Smaller blocks make incrementals of scattered small changes
// smaller (docs/BENCHMARKS.md measures it) at the price of more objects
// and requests per byte. Absent: the chain's size, or for a new chain
// s3chain.DefaultBlockSize.
const ParamBlockSize = volume.BlockSizeParam

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
