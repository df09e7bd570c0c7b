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
// "" for no source, a blank or a block volume without a filesystem.
func (d *controller) sourceFSType(ctx context.Context, src backend.LVol) (string, error) {
	if fs := volume.Of(src).FSType; src.ID == "" || fs != "" {
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
