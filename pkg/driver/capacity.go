package driver

import (
	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const (
	// defaultVolumeSize is used when a request names no capacity (1 GiB).
	defaultVolumeSize int64 = 1 << 30
	// sizeAlign is the lvol size granularity in bytes (the pool rounds up to it).
	sizeAlign int64 = 4096
)

// minFSSize is the smallest volume in bytes that mkfs accepts per fsType:
// xfsprogs refuses filesystems under 300 MiB, so a smaller XFS request is
// rounded up here rather than failing at the first NodeStageVolume.
var minFSSize = map[string]int64{"xfs": 300 << 20}

// sizeFor picks a volume size in bytes for a capacity range (CSI spec
// "CapacityRange"): at least required_bytes and minBytes (a source's size),
// at most limit_bytes, aligned to sizeAlign. Negative values or a limit below
// the required size are InvalidArgument; a range that cannot hold minBytes
// or the alignment is OutOfRange.
func sizeFor(r *csi.CapacityRange, minBytes int64) (int64, error) {
	req, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	if req < 0 || limit < 0 {
		return 0, status.Error(codes.InvalidArgument, "capacity_range bytes must not be negative")
	}
	if limit > 0 && limit < req {
		return 0, status.Errorf(codes.InvalidArgument, "capacity_range limit_bytes %d is below required_bytes %d", limit, req)
	}
	size := req
	if size == 0 {
		size = defaultVolumeSize
		if limit > 0 && limit < size {
			size = limit
		}
	}
	if size < minBytes {
		size = minBytes
	}
	size = (size + sizeAlign - 1) / sizeAlign * sizeAlign
	if limit > 0 && size > limit {
		return 0, status.Errorf(codes.OutOfRange, "capacity_range limit_bytes %d cannot hold %d bytes (the source's size, aligned to %d bytes)", limit, size, sizeAlign)
	}
	return size, nil
}

// fitsRange reports whether an existing volume's size satisfies a capacity
// range, for idempotent CreateVolume retries.
func fitsRange(size int64, r *csi.CapacityRange) bool {
	if size < r.GetRequiredBytes() {
		return false
	}
	return r.GetLimitBytes() == 0 || size <= r.GetLimitBytes()
}
