package s3chain

import (
	"fmt"
	"strings"
)

// Volume modes of a backup: the manifest field volumeMode (docs/FORMAT.md
// §4) records one of these exact strings, spelled as Kubernetes spells
// PersistentVolume volumeMode. Every writer (the driver's uploads,
// chainvolctl backup create) uses these constants, and every reader compares
// through NormalizeVolumeMode, so a backup made by one restores through the
// other.
const (
	// VolumeModeFilesystem: the volume holds a filesystem (FSType names it,
	// "" when it could not be detected) and is restored as a mount volume.
	VolumeModeFilesystem = "Filesystem"
	// VolumeModeBlock: a raw block volume, restored as a block volume.
	VolumeModeBlock = "Block"
)

// NormalizeVolumeMode returns VolumeModeFilesystem or VolumeModeBlock for s
// in any letter case: drivers before this definition wrote "filesystem" and
// "block", and their backups must still restore. Errors: s is neither
// (including ""), wrapping ErrInvalidManifest.
func NormalizeVolumeMode(s string) (string, error) {
	switch {
	case strings.EqualFold(s, VolumeModeFilesystem):
		return VolumeModeFilesystem, nil
	case strings.EqualFold(s, VolumeModeBlock):
		return VolumeModeBlock, nil
	}
	return "", fmt.Errorf("%w: volume mode %q is neither %s nor %s", ErrInvalidManifest, s, VolumeModeFilesystem, VolumeModeBlock)
}
