package driver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/klog/v2"
	"k8s.io/mount-utils"

	"github.com/chainvol/chainvol/pkg/volume"
)

// publishReq is what publishing needs once a request has been validated.
type publishReq struct {
	rdev            uint64
	devPath         string
	staging, target string
	readonly        bool
	exclusive       bool // SINGLE_NODE_SINGLE_WRITER: no other target allowed
	flags           []string
}

// NodePublishVolume bind mounts the staged filesystem onto the target
// directory, or the loop device onto a target file for raw block access,
// read-only when asked (CSI spec "NodePublishVolume").
func (d *node) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id, target, staging := req.GetVolumeId(), req.GetTargetPath(), req.GetStagingTargetPath()
	if err := requireArgs("volume_id", id, "target_path", target); err != nil {
		return nil, nodeError("", err)
	}
	access, err := nodeCapability(req.GetVolumeCapability())
	if err != nil {
		return nil, nodeError("", err)
	}
	if staging == "" {
		// CSI spec "Staging target path not set": we advertise STAGE_UNSTAGE_VOLUME.
		return nil, nodeError("", volume.Refuse(volume.ClassPrecondition, "staging_target_path is required: the volume must be staged with NodeStageVolume first"))
	}
	_, file, unlock, err := d.lockedVolumeFile(ctx, id)
	if err != nil {
		return nil, nodeError("", err)
	}
	defer unlock()

	p, err := d.publishArgs(ctx, file, req)
	if err != nil {
		return nil, nodeError("", err)
	}
	if access == accessBlock {
		err = d.publishBlock(p)
	} else {
		err = d.publishMount(p)
	}
	if err != nil {
		return nil, nodeError("", err)
	}
	klog.V(2).InfoS("published volume", "volume", id, "target", target, "readonly", p.readonly, "access", access)
	return &csi.NodePublishVolumeResponse{}, nil
}

// NodeUnpublishVolume unmounts the target and removes the file or directory
// this plugin created there; an absent target is already unpublished (CSI
// spec "NodeUnpublishVolume"). The volume need not exist any more.
func (d *node) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	unlock, err := d.lockVolume(id, "target_path", target)
	if err != nil {
		return nil, err
	}
	defer unlock()

	if _, err := d.unmountAll(target); err != nil {
		return nil, nodeError("", err)
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nodeError("", volume.Mark(volume.ErrNodeFailed, "remove target %s: %w", target, err))
	}
	klog.V(2).InfoS("unpublished volume", "volume", id, "target", target)
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// publishArgs finds the staged loop device of the lvol file and gathers the
// request's options. No loop device means the volume is not staged.
func (d *node) publishArgs(ctx context.Context, file string, req *csi.NodePublishVolumeRequest) (publishReq, error) {
	dev, err := d.deviceOf(ctx, req.GetVolumeId(), file)
	if err != nil {
		return publishReq{}, volume.Mark(volume.ErrNodeFailed, "find the loop device: %w", err)
	}
	if dev == "" {
		return publishReq{}, volume.Mark(volume.ErrNotStaged, "volume %s is not staged on this node: call NodeStageVolume first", req.GetVolumeId())
	}
	rdev, err := deviceNumber(dev)
	if err != nil {
		return publishReq{}, volume.Mark(volume.ErrNodeFailed, "%w", err)
	}
	devRO, err := loopReadOnly(dev)
	if err != nil {
		return publishReq{}, volume.Mark(volume.ErrNodeFailed, "%w", err)
	}
	c := req.GetVolumeCapability()
	mode := c.GetAccessMode().GetMode()
	return publishReq{
		rdev:    rdev,
		devPath: dev,
		staging: req.GetStagingTargetPath(),
		target:  req.GetTargetPath(),
		// A reader-only mode, or a volume staged on a read-only device, is
		// published read-only even when the request's readonly is false.
		readonly:  req.GetReadonly() || readerOnly(c) || devRO,
		exclusive: mode == csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER,
		flags:     c.GetMount().GetMountFlags(),
	}, nil
}

// publishMount bind mounts the staging path onto the target directory.
func (d *node) publishMount(p publishReq) error {
	staged, err := mountAt(p.staging)
	if err != nil {
		return volume.Mark(volume.ErrNodeFailed, "%w", err)
	}
	if staged == nil || !onDevice(staged, p.rdev) {
		return volume.Mark(volume.ErrNotStaged, "volume is not staged at %s: call NodeStageVolume first", p.staging)
	}
	done, err := publishedAlready(p, func(m *mount.MountInfo) bool { return onDevice(m, p.rdev) })
	if err != nil || done {
		return err
	}
	if err := checkExclusive(p); err != nil {
		return err
	}
	if err := os.MkdirAll(p.target, 0o750); err != nil {
		return volume.Mark(volume.ErrNodeFailed, "create target directory: %w", err)
	}
	if err := d.mounter.Mount(p.staging, p.target, "", bindOptions(p)); err != nil {
		return volume.Mark(volume.ErrNodeFailed, "bind mount %s on %s: %w", p.staging, p.target, err)
	}
	return nil
}

// publishBlock bind mounts the loop device onto a target file, creating the
// file and its directory; a file this call created is removed on failure.
func (d *node) publishBlock(p publishReq) error {
	done, err := publishedAlready(p, func(*mount.MountInfo) bool { return isDevice(p.target, p.rdev) })
	if err != nil || done {
		return err
	}
	if err := checkExclusive(p); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p.target), 0o750); err != nil {
		return volume.Mark(volume.ErrNodeFailed, "create the target's directory: %w", err)
	}
	f, err := os.OpenFile(p.target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
	created := err == nil
	if created {
		f.Close()
	} else if !errors.Is(err, os.ErrExist) {
		return volume.Mark(volume.ErrNodeFailed, "create target file: %w", err)
	}
	if err := d.mounter.Mount(p.devPath, p.target, "", bindOptions(p)); err != nil {
		if created {
			_ = os.Remove(p.target)
		}
		return volume.Mark(volume.ErrNodeFailed, "bind mount %s on %s: %w", p.devPath, p.target, err)
	}
	return nil
}

// publishedAlready reports whether the target is already a mount of this
// volume with the same read-only setting. Anything else mounted there is
// AlreadyExists (CSI spec: same target, other arguments).
func publishedAlready(p publishReq, ours func(*mount.MountInfo) bool) (bool, error) {
	m, err := mountAt(p.target)
	if err != nil || m == nil {
		return false, err
	}
	if !ours(m) {
		return false, volume.Mark(volume.ErrMountConflict, "target %s already has %s mounted, not this volume", p.target, m.Source)
	}
	if ro := slices.Contains(m.MountOptions, "ro"); ro != p.readonly {
		return false, volume.Mark(volume.ErrMountConflict, "volume is already published at %s with readonly=%t", p.target, ro)
	}
	return true, nil
}

// checkExclusive enforces SINGLE_NODE_SINGLE_WRITER: a volume published at
// another target is FailedPrecondition (CSI spec "NodePublishVolume", second
// table, T1!=T2).
func checkExclusive(p publishReq) error {
	if !p.exclusive {
		return nil
	}
	mounts, err := mountsOf(p.devPath, p.rdev)
	if err != nil {
		return volume.Mark(volume.ErrNodeFailed, "%w", err)
	}
	for _, m := range mounts {
		if m != resolvePath(p.staging) && m != resolvePath(p.target) {
			return volume.Mark(volume.ErrInUse, "volume has access mode SINGLE_NODE_SINGLE_WRITER and is already published at %s", m)
		}
	}
	return nil
}

// bindOptions are the options of a publish bind mount; mount-utils remounts
// a bind mount to apply "ro", which a plain bind mount would ignore. For a
// raw block publish "ro" does not stop writes through the device file (the
// kernel checks mount flags only for regular files): only a device staged
// read-only (reader-only modes) refuses them.
func bindOptions(p publishReq) []string {
	opts := append([]string{"bind"}, p.flags...)
	if p.readonly {
		opts = append(opts, "ro")
	}
	return opts
}
