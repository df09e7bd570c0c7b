package driver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/klog/v2"
	"k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"

	"github.com/chainvol/chainvol/pkg/volume"
)

// NodeExpandVolume grows the lvol to the requested size, makes the loop
// device see it and grows an ext4 or XFS filesystem on it online;
// a raw block volume only needs the device refreshed (CSI spec
// "NodeExpandVolume"). It returns the device's size. Growing past what the
// volume's backup chain holds is OutOfRange (checkGrowFits).
func (d *node) NodeExpandVolume(ctx context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	id, p := req.GetVolumeId(), req.GetVolumePath()
	if err := requireArgs("volume_id", id, "volume_path", p); err != nil {
		return nil, nodeError("", err)
	}
	rawBlock := false
	if c := req.GetVolumeCapability(); c != nil {
		access, err := nodeCapability(c)
		if err != nil {
			return nil, nodeError("", err)
		}
		rawBlock = access == accessBlock
	}
	lv, file, unlock, err := d.lockedVolumeFile(ctx, id)
	if err != nil {
		return nil, nodeError("", err)
	}
	defer unlock()
	if err := d.instantExpandable(lv); err != nil {
		return nil, nodeError("", err)
	}
	if err := d.expandable(ctx, id, file); err != nil {
		return nil, nodeError("", err)
	}
	// The lvol is grown here when ControllerExpandVolume ran on another
	// node (the external-resizer runs once per cluster) and could not.
	if r := req.GetCapacityRange(); r.GetRequiredBytes() > lv.SizeBytes {
		size, err := sizeFor(r, lv.SizeBytes)
		if err != nil {
			return nil, nodeError("", err)
		}
		if err := d.checkGrowFits(ctx, lv, size, req.GetSecrets()); err != nil {
			return nil, nodeError("", err)
		}
		if _, err := d.pool.Resize(ctx, lv.ID, size); err != nil {
			return nil, nodeError("grow lvol", err)
		}
	}

	size, err := d.expandAt(ctx, id, file, p, rawBlock)
	if err != nil {
		return nil, nodeError("", err)
	}
	klog.V(2).InfoS("expanded volume on node", "volume", id, "path", p, "bytes", size)
	return &csi.NodeExpandVolumeResponse{CapacityBytes: size}, nil
}

// expandable refuses to grow a volume staged reader-only, before its lvol
// or anything on it is touched: growing writes (CSI spec
// "NodeExpandVolume": "Volume in use", FailedPrecondition).
func (d *node) expandable(ctx context.Context, id, file string) error {
	dev, err := d.deviceOf(ctx, id, file)
	if err != nil || dev == "" {
		return nil // expandAt reports what is wrong
	}
	if ro, err := loopReadOnly(dev); err == nil && ro {
		return volume.Mark(volume.ErrIncompatible, "volume %s is staged reader-only (read-only loop device %s): it cannot grow until it is staged for a writer access mode", id, dev)
	}
	return nil
}

// expandAt refreshes the loop device behind path p and grows the filesystem
// mounted there, if any; it returns the device's new size. For a raw block
// capability p is not checked: the kubelet may pass a path (a symlink or a
// directory of its device map) that is not the device file itself.
func (d *node) expandAt(ctx context.Context, id, file, p string, rawBlock bool) (int64, error) {
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
		return 0, volume.Mark(volume.ErrNodeFailed, "refresh the size of %s: %w", dev, err)
	}
	if !block {
		if _, err := mount.NewResizeFs(d.exec).Resize(dev, p); err != nil {
			return 0, volume.Mark(volume.ErrNodeFailed, "grow the filesystem of volume %s: %w", id, err)
		}
	}
	size, err := deviceSize(dev)
	if err != nil {
		return 0, volume.Mark(volume.ErrNodeFailed, "size of %s: %w", dev, err)
	}
	return size, nil
}

// growExtOffline grows an unmounted ext filesystem that is smaller than its
// device before it is mounted. Offline growth is what resize2fs prefers, and
// unlike online growth it does not need CAP_SYS_RESOURCE; e2fsck -f is its
// precondition, so it runs only when the sizes differ.
func (d *node) growExtOffline(dev, fsType string) error {
	if !strings.HasPrefix(fsType, "ext") {
		return nil
	}
	fsBytes, err := d.extSize(dev)
	if err != nil {
		return err
	}
	devBytes, err := deviceSize(dev)
	if err != nil || fsBytes == 0 || fsBytes >= devBytes {
		return err // fsBytes 0: a blank device, formatted at full size
	}
	out, err := d.exec.Command("e2fsck", "-f", "-p", dev).CombinedOutput()
	var ee utilexec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitStatus() == 1) { // 1: errors corrected
		return fmt.Errorf("e2fsck -f -p %s: %v: %s", dev, err, out)
	}
	if out, err := d.exec.Command("resize2fs", dev).CombinedOutput(); err != nil {
		return fmt.Errorf("resize2fs %s: %v: %s", dev, err, out)
	}
	klog.InfoS("grew filesystem before mounting", "device", dev, "fsType", fsType, "from", fsBytes, "to", devBytes)
	return nil
}

// extSize returns the size of the ext filesystem on dev from its superblock,
// or 0 when dev holds no ext filesystem.
func (d *node) extSize(dev string) (int64, error) {
	out, err := d.exec.Command("dumpe2fs", "-h", dev).Output()
	if err != nil {
		return 0, nil
	}
	var blocks, size int64
	for _, line := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(line, ":")
		switch k {
		case "Block count":
			blocks, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		case "Block size":
			size, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return blocks * size, nil
}

// growFS grows the filesystem mounted at mountPath to the size of dev (after
// a restore into a bigger volume, or an expansion while unstaged).
func (d *node) growFS(dev, mountPath string) error {
	r := mount.NewResizeFs(d.exec)
	need, err := r.NeedResize(dev, mountPath)
	if err != nil || !need {
		return err
	}
	_, err = r.Resize(dev, mountPath)
	return err
}
