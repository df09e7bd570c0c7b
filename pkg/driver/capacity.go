package driver

import (
	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/chainvol/chainvol/pkg/volume"
)

// minFSSize is the smallest volume in bytes that mkfs accepts per fsType:
// xfsprogs refuses filesystems under 300 MiB, so a smaller XFS request is
// rounded up here rather than failing at the first NodeStageVolume.
var minFSSize = map[string]int64{"xfs": 300 << 20}

// sizeFor is volume.SizeFor of a CSI capacity range, its refusal a
// status (InvalidArgument, OutOfRange).
func sizeFor(r *csi.CapacityRange, minBytes int64) (int64, error) {
	size, err := volume.SizeFor(r.GetRequiredBytes(), r.GetLimitBytes(), minBytes)
	return size, volumeError("", err)
}
