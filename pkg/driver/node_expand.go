package driver

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
	"k8s.io/mount-utils"
)

// NodeExpandVolume makes the loop device see the lvol's new size (grown by
// ControllerExpandVolume) and grows an ext4 or XFS filesystem on it online;
// a raw block volume only needs the device refreshed (CSI spec
// "NodeExpandVolume"). It returns the device's size.
func (d *Driver) NodeExpandVolume(ctx context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	id, p := req.GetVolumeId(), req.GetVolumePath()
	if err := requireArgs("volume_id", id, "volume_path", p); err != nil {
		return nil, err
	}
	rawBlock := false
	if c := req.GetVolumeCapability(); c != nil {
		access, err := nodeCapability(c)
		if err != nil {
			return nil, err
		}
		rawBlock = access == accessBlock
	}
	lv, file, err := d.volumeFile(ctx, id)
	if err != nil {
		return nil, err
	}
	if want := req.GetCapacityRange().GetRequiredBytes(); want > lv.SizeBytes {
		// CSI spec "Unsupported capacity_range": the node cannot grow the
		// lvol itself; ControllerExpandVolume must have done so first.
		return nil, status.Errorf(codes.OutOfRange, "volume %s is %d bytes, less than the %d requested: expand it with ControllerExpandVolume first", id, lv.SizeBytes, want)
	}
	if !d.locks.tryLock(id) {
		return nil, errBusy(id)
	}
	defer d.locks.unlock(id)

	size, err := d.expandAt(ctx, id, file, p, rawBlock)
	if err != nil {
		return nil, err
	}
	klog.V(2).InfoS("expanded volume on node", "volume", id, "path", p, "bytes", size)
	return &csi.NodeExpandVolumeResponse{CapacityBytes: size}, nil
}

// expandAt refreshes the loop device behind path p and grows the filesystem
// mounted there, if any; it returns the device's new size. For a raw block
// capability p is not checked: the kubelet may pass a path (a symlink or a
// directory of its device map) that is not the device file itself.
func (d *Driver) expandAt(ctx context.Context, id, file, p string, rawBlock bool) (int64, error) {
	var dev string
	var err error
	block := rawBlock
	if rawBlock {
		dev, err = d.stagedDevice(ctx, id, file)
	} else {
		dev, block, err = d.volumeAt(ctx, id, file, p)
	}
	if err != nil {
		return 0, err
	}
	if err := d.loops.refresh(ctx, dev); err != nil {
		return 0, status.Errorf(codes.Internal, "refresh the size of %s: %v", dev, err)
	}
	if !block {
		if _, err := mount.NewResizeFs(d.exec).Resize(dev, p); err != nil {
			return 0, status.Errorf(codes.Internal, "grow the filesystem of volume %s: %v", id, err)
		}
	}
	size, err := deviceSize(dev)
	if err != nil {
		return 0, status.Errorf(codes.Internal, "size of %s: %v", dev, err)
	}
	return size, nil
}
