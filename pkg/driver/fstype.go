package driver

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// settleFSType is the one rule for the filesystem type of a new volume,
// applied at CreateVolume for every content source (issue 14): with no
// source, or one that holds no filesystem we know of (srcFS ""), the
// request's; else the source's, and a request naming another type is
// InvalidArgument naming both, since a clone or restore is never
// reformatted and the node would refuse to mount it. what names the source
// in the message ("volume vol-…", "snapshot snap-…", "backup ID").
func settleFSType(requested, srcFS, what string) (string, error) {
	switch {
	case srcFS == "":
		return requested, nil
	case requested == "" || requested == srcFS:
		return srcFS, nil
	}
	return "", status.Errorf(codes.InvalidArgument, "%s holds a %s filesystem but the request asks for fsType %s; drop csi.storage.k8s.io/fstype from the StorageClass (the volume keeps its source's filesystem) or set it to %s",
		what, srcFS, requested, srcFS)
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
		return "", status.Errorf(codes.Internal, "detect the filesystem of content source %s: %v", src.ID, err)
	}
	return fs, nil
}
