package driver

import (
	"context"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// settleFSType is volume.SettleFSType, its refusal an InvalidArgument
// status.
func settleFSType(requested, srcFS, what string) (string, error) {
	fs, err := volume.SettleFSType(requested, srcFS, what)
	return fs, volumeError("", err)
}

// sourceFSType is the filesystem a local source lvol holds: its label, or,
// when none was recorded (created without an fsType and formatted by
// NodeStageVolume with the default), what blkid finds in its data file.
// "" for no source, a blank or a block volume without a filesystem. A
// Block source is always read from its data file: its label may be stale
// (a Block volume made from a filesystem records it, then its user may
// overwrite every byte), and a mount volume trusting it would be
// formatted over those bytes by NodeStageVolume (issue 28).
func (d *controller) sourceFSType(ctx context.Context, src backend.LVol) (string, error) {
	rec := volume.Of(src)
	if fs := rec.FSType; src.ID == "" || (fs != "" && rec.AccessType != volume.AccessBlock) {
		return fs, nil
	}
	path, err := d.pool.DataPath(src.ID)
	if err != nil {
		return "", volumeError("content source "+src.ID, err)
	}
	fs, err := d.mounter.GetDiskFormat(path)
	if err != nil {
		return "", volume.Mark(volume.ErrNodeFailed, "detect the filesystem of content source %s: %w", src.ID, err)
	}
	return fs, nil
}
