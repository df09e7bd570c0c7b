package driver

import (
	"context"
	"errors"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/pkg/volume"
)

// NodeGetVolumeStats reports the bytes and inodes of a mounted volume from
// statfs, or the size of a raw block volume (CSI spec "NodeGetVolumeStats":
// used and available MAY be omitted for block). It takes no lock: the
// kubelet polls it and a read must not make stage or expand answer Aborted.
func (d *node) NodeGetVolumeStats(ctx context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	id, p := req.GetVolumeId(), req.GetVolumePath()
	if err := requireArgs("volume_id", id, "volume_path", p); err != nil {
		return nil, nodeError("", err)
	}
	_, file, err := d.volumeFile(ctx, id)
	if err != nil {
		return nil, nodeError("", err)
	}
	_, block, err := d.volumeAt(ctx, id, file, p)
	if err != nil {
		return nil, nodeError("", err)
	}
	if block {
		size, err := deviceSize(p)
		if err != nil {
			return nil, nodeError("", volume.Mark(volume.ErrNodeFailed, "size of block volume %s: %w", id, err))
		}
		return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{
			{Unit: csi.VolumeUsage_BYTES, Total: size},
		}}, nil
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(p, &fs); err != nil {
		return nil, nodeError("", volume.Mark(volume.ErrNodeFailed, "statfs %s: %w", p, err))
	}
	return &csi.NodeGetVolumeStatsResponse{Usage: fsUsage(&fs)}, nil
}

// fsUsage converts statfs results to CSI usage: bytes available to
// unprivileged users, and inodes.
func fsUsage(fs *unix.Statfs_t) []*csi.VolumeUsage {
	bs := fs.Bsize
	return []*csi.VolumeUsage{{
		Unit:      csi.VolumeUsage_BYTES,
		Total:     int64(fs.Blocks) * bs,
		Available: int64(fs.Bavail) * bs,
		Used:      int64(fs.Blocks-fs.Bfree) * bs,
	}, {
		Unit:      csi.VolumeUsage_INODES,
		Total:     int64(fs.Files),
		Available: int64(fs.Ffree),
		Used:      int64(fs.Files - fs.Ffree),
	}}
}

// volumeAt returns the loop device of the lvol file and whether p exposes
// it as a raw block device (the device file) rather than a filesystem path
// on it. A path that does not exist or belongs to something else is
// NotFound (CSI spec: "does not exist on specified volume_path").
func (d *node) volumeAt(ctx context.Context, id, file, p string) (dev string, block bool, err error) {
	if dev, err = d.stagedDevice(ctx, id, file); err != nil {
		return "", false, err
	}
	rdev, err := deviceNumber(dev)
	if err != nil {
		return "", false, volume.Mark(volume.ErrNodeFailed, "%w", err)
	}
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return "", false, volume.Mark(volume.ErrNotAtPath, "volume path %s does not exist", p)
		}
		return "", false, volume.Mark(volume.ErrNodeFailed, "stat %s: %w", p, err)
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFBLK && st.Rdev == rdev:
		return dev, true, nil
	case st.Dev == rdev:
		return dev, false, nil
	}
	return "", false, volume.Mark(volume.ErrNotAtPath, "volume %s is not at %s (that path is not on its device %s)", id, p, dev)
}

// stagedDevice returns the loop device of the lvol file; none means the
// volume is not staged on this node (NotFound).
func (d *node) stagedDevice(ctx context.Context, id, file string) (string, error) {
	dev, err := d.deviceOf(ctx, id, file)
	if err != nil {
		return "", volume.Mark(volume.ErrNodeFailed, "find the loop device of volume %s: %w", id, err)
	}
	if dev == "" {
		return "", volume.Mark(volume.ErrNotAtPath, "volume %s is not staged on this node", id)
	}
	return dev, nil
}
