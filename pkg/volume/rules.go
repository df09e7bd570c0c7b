package volume

import (
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

// The rules a volume request is held to, for new volumes and restores
// alike. Each refuses with a Refuse error of the class the CSI spec asks
// for (pkg/driver answers its code with the message unchanged).

const (
	// DefaultVolumeSize is used when a request names no capacity (1 GiB).
	DefaultVolumeSize int64 = 1 << 30
	// SizeAlign is the lvol size granularity in bytes (the pool rounds up to it).
	SizeAlign int64 = 4096
)

// SizeFor picks a volume size in bytes for a capacity range of required
// and limit bytes (0: none; CSI spec "CapacityRange"): at least required
// and minBytes (a source's size), at most limit, aligned to SizeAlign.
// Negative values or a limit below the required size are ClassInvalid; a
// range that cannot hold minBytes or the alignment is ClassOutOfRange.
func SizeFor(required, limit, minBytes int64) (int64, error) {
	if required < 0 || limit < 0 {
		return 0, Refuse(ClassInvalid, "capacity_range bytes must not be negative")
	}
	if limit > 0 && limit < required {
		return 0, Refuse(ClassInvalid, "capacity_range limit_bytes %d is below required_bytes %d", limit, required)
	}
	size := required
	if size == 0 {
		size = DefaultVolumeSize
		if limit > 0 && limit < size {
			size = limit
		}
	}
	size = max(size, minBytes)
	size = (size + SizeAlign - 1) / SizeAlign * SizeAlign
	if limit > 0 && size > limit {
		return 0, Refuse(ClassOutOfRange, "capacity_range limit_bytes %d cannot hold %d bytes (the source's size, aligned to %d bytes)", limit, size, SizeAlign)
	}
	return size, nil
}

// FitsRange reports whether an existing volume's size satisfies a capacity
// range of required and limit bytes (0: none), for idempotent retries.
func FitsRange(size, required, limit int64) bool {
	return size >= required && (limit == 0 || size <= limit)
}

// SettleFSType is the one rule for the filesystem type of a new volume,
// applied at CreateVolume for every content source (issue 14): with no
// source, or one that holds no filesystem we know of (srcFS ""), the
// request's; else the source's, and a request naming another type is
// ClassInvalid naming both, since a clone or restore is never reformatted
// and the node would refuse to mount it. what names the source in the
// message ("volume vol-…", "snapshot snap-…", "backup ID").
func SettleFSType(requested, srcFS, what string) (string, error) {
	switch {
	case srcFS == "":
		return requested, nil
	case requested == "" || requested == srcFS:
		return srcFS, nil
	}
	return "", Refuse(ClassInvalid, "%s holds a %s filesystem but the request asks for fsType %s; drop csi.storage.k8s.io/fstype from the StorageClass (the volume keeps its source's filesystem) or set it to %s",
		what, srcFS, requested, srcFS)
}

// Want is what a CreateVolume request asks of its volume, held against an
// existing lvol of its name (SameVolume).
type Want struct {
	Name            string // the request's name
	Required, Limit int64  // the capacity range in bytes (0: none)
	SourceID        string // the content source's id ("" for none)
	Record          Record // ParamsDigest, AccessType and the capability's FSType ("" when none)
}

// SameVolume checks that existing volume lv satisfies a retried request w
// (CSI spec "CreateVolume": another size range, source, parameters, access
// or filesystem type is ClassExists).
func SameVolume(lv backend.LVol, w Want) error {
	rec := Of(lv)
	switch {
	case !FitsRange(lv.SizeBytes, w.Required, w.Limit):
		return Refuse(ClassExists, "volume %q exists with size %d bytes, outside the requested capacity range", w.Name, lv.SizeBytes)
	case lv.SourceID != w.SourceID:
		return Refuse(ClassExists, "volume %q exists with another content source (%q)", w.Name, lv.SourceID)
	case rec.ParamsDigest != w.Record.ParamsDigest:
		return Refuse(ClassExists, "volume %q exists with other parameters", w.Name)
	case rec.AccessType != w.Record.AccessType:
		return Refuse(ClassExists, "volume %q exists with access type %s", w.Name, rec.AccessType)
	case w.Record.FSType != "" && rec.FSType != "" && w.Record.FSType != rec.FSType:
		// Another capability than the volume's, found before the source is
		// resolved, so that a clone retried with another fsType is not
		// answered with its volume.
		return Refuse(ClassExists, "volume %q exists with a %s filesystem, not %s", w.Name, rec.FSType, w.Record.FSType)
	}
	return nil
}

// ChainFull is the refusal, of class c, of a volume of size bytes that
// does not fit its chain of block size bs (bytes): the limit in bytes and
// the ways out, all of them a new chain, since a chain's block size is
// fixed (FORMAT.md §1).
func ChainFull(c Class, chain string, size, bs int64) error {
	lim := s3chain.MaxVolumeSize(bs)
	return Refuse(c, "a volume of %d bytes is larger than backup chain %q holds: %d bytes (%s; %d blocks of its block size %s, fixed by its first backup); "+
		"to back up a larger volume use a new chain: restore a backup into a new claim (its backups go to the claim's own chain), "+
		"or back it up under another chain name (chainvolctl backup create --chain)",
		size, chain, lim, Quantity(lim), s3chain.MaxBlocks, Quantity(bs))
}

// Quantity prints bytes as a Kubernetes quantity ("4Mi").
func Quantity(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}
