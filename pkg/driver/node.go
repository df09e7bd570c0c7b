package driver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// defaultFSType is used when neither the capability nor the lvol's labels
// name a filesystem (the same default as mount-utils' FormatAndMount).
const defaultFSType = "ext4"

// NodeStageVolume attaches the volume's lvol to a loop device and, for a
// mount capability, mounts its filesystem at the staging path, formatting
// only a blank device (CSI spec "NodeStageVolume"). A reader-only access
// mode attaches the device read-only and mounts without replay
// (readonly.go); a volume already staged in the other mode is
// AlreadyExists. What this call did is undone if a later step fails.
func (d *node) NodeStageVolume(ctx context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetStagingTargetPath()
	if err := requireArgs("volume_id", id, "staging_target_path", target); err != nil {
		return nil, nodeError("", err)
	}
	access, err := nodeCapability(req.GetVolumeCapability())
	if err != nil {
		return nil, nodeError("", err)
	}
	lv, file, err := d.volumeFile(ctx, id)
	if err != nil {
		return nil, nodeError("", err)
	}
	if err := stageable(lv, access); err != nil {
		return nil, nodeError("", err)
	}
	unlock, err := lock(d.locks, lvolLock(id))
	if err != nil {
		return nil, nodeError("", err)
	}
	defer unlock()

	c := req.GetVolumeCapability()
	tx := &stageTx{loops: d.loops, file: file, readOnly: readerOnly(c)}
	if d.onInstant(lv) {
		if err := d.serveInstant(ctx, lv, tx); err != nil {
			return nil, nodeError("", err)
		}
	}
	dev, err := tx.attach(ctx)
	if err == nil && access == accessMount {
		err = d.stageMount(ctx, lv, dev, target, c, !tx.instant)
	}
	if err != nil {
		d.rollbackStage(ctx, id, tx)
		return nil, nodeError("", err)
	}
	klog.V(2).InfoS("staged volume", "volume", id, "device", dev, "path", target, "access", access, "readOnly", tx.readOnly, "instant", tx.instant)
	return &csi.NodeStageVolumeResponse{}, nil
}

// NodeUnstageVolume unmounts the staging path (leaving the directory to the
// CO) and detaches the lvol's loop devices. Everything is found from the
// kernel, so it is idempotent across driver restarts, and an unknown volume
// whose staging path is not mounted is already unstaged
// (CSI spec "NodeUnstageVolume": not staged → OK).
func (d *node) NodeUnstageVolume(ctx context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetStagingTargetPath()
	unlock, err := d.lockVolume(id, "staging_target_path", target)
	if err != nil {
		return nil, nodeError("", err)
	}
	defer unlock()

	file, err := d.unstageFile(ctx, id)
	if err != nil {
		return nil, nodeError("", err)
	}
	source, err := d.unmountAll(target)
	if err != nil {
		return nil, nodeError("", err)
	}
	if file == "" {
		// The lvol is gone (deleted while staged): release the device that
		// was mounted here if it is a loop device over a pool file.
		err = d.detachOrphan(ctx, source)
	} else {
		err = d.loops.detach(ctx, file)
	}
	if err == nil {
		err = d.detachInstant(ctx, id)
	}
	if err != nil {
		return nil, nodeError("", volume.Mark(volume.ErrNodeFailed, "detach loop device of volume %s: %w", id, err))
	}
	klog.V(2).InfoS("unstaged volume", "volume", id, "path", target)
	return &csi.NodeUnstageVolumeResponse{}, nil
}

// requireArgs returns InvalidArgument naming the first empty value of
// name/value pairs (CSI spec: required fields).
func requireArgs(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			return status.Errorf(codes.InvalidArgument, "%s is required", pairs[i])
		}
	}
	return nil
}

// nodeCapability validates the capability of a node request and returns its
// access type. A missing capability or a MULTI_NODE mode is InvalidArgument.
func nodeCapability(c *csi.VolumeCapability) (string, error) {
	if c == nil {
		return "", status.Error(codes.InvalidArgument, "volume_capability is required")
	}
	access, _, err := checkCapability(c)
	if err != nil {
		return "", status.Errorf(codes.InvalidArgument, "volume_capability: %v", err)
	}
	return access, nil
}

// volumeFile resolves a volume id to its lvol (in any phase) and data
// file; ids never reach a path except through the pool. Errors, wrapped
// with "volume ID": backend.ErrNotFound for an unknown or malformed id or a
// snapshot's id (CSI spec "Volume does not exist"), those of the pool.
func (d *node) volumeFile(ctx context.Context, id string) (backend.LVol, string, error) {
	lv, err := d.vols.Lookup(ctx, backend.KindVolume, id)
	var file string
	if err == nil {
		file, err = d.pool.DataPath(id)
	}
	if err != nil {
		return backend.LVol{}, "", fmt.Errorf("volume %s: %w", id, err)
	}
	return lv, file, nil
}

// lockedVolumeFile is volumeFile under the lvol's lock (locks.go), for the
// node RPCs that change what a volume's data file serves; unlock releases
// it. Errors: volumeFile's, ErrBusy while another call holds the lock.
func (d *node) lockedVolumeFile(ctx context.Context, id string) (lv backend.LVol, file string, unlock func(), err error) {
	if lv, file, err = d.volumeFile(ctx, id); err != nil {
		return lv, file, nil, err
	}
	if unlock, err = lock(d.locks, lvolLock(id)); err != nil {
		return lv, file, nil, err
	}
	return lv, file, unlock, nil
}

// stageable refuses a volume that is still being restored, or one created
// for the other access type (CSI spec "Exceeds capabilities": FailedPrecondition).
func stageable(lv backend.LVol, access string) error {
	rec := volume.Of(lv)
	if rec.Phase == volume.PhaseRestoring { // a hydrating one is staged over its image
		return volume.Mark(volume.ErrRestoring, "volume %s is still being restored; retry when the restore has finished", lv.ID)
	}
	if want := rec.AccessType; want != "" && want != access {
		return volume.Mark(volume.ErrIncompatible, "volume %s was created for %s access and cannot be staged for %s access", lv.ID, want, access)
	}
	return nil
}

// unstageFile returns the lvol's data file, or "" when the lvol does not
// exist (then there is nothing of ours left to detach by file).
func (d *node) unstageFile(ctx context.Context, id string) (string, error) {
	_, file, err := d.volumeFile(ctx, id)
	if errors.Is(err, backend.ErrNotFound) {
		return "", nil
	}
	return file, nodeError("", err)
}

// stageTx records what one NodeStageVolume did so that a failure can undo it
// (ceph-csi stageTransaction): a loop device this call attached is detached
// again; one that was already attached (a staged volume) is left alone.
type stageTx struct {
	loops    *loopDevices
	file     string
	readOnly bool // attach read-only: a reader-only access mode
	instant  bool // file is a hydrating volume's FUSE file (node_instant.go)
	attached bool
}

// attach returns the loop device of the lvol, attaching one if needed; one
// already attached in the other mode is AlreadyExists (checkLoopMode). A
// device found attached keeps the size its file had when it was attached:
// the volume may be staged already, or its last unstage's detach may not
// have finished (udev's probe holds a device just closed, and the kernel
// only marks it for autoclear), while ControllerExpandVolume grew the file
// since; its capacity is read again so that the filesystem is grown to the
// lvol here (ext4 offline, before the mount) and not later by
// NodeExpandVolume online (found by Kubernetes' storage suite on two nodes:
// "re-created on the same node after controller resize" failed in online
// resize2fs).
func (tx *stageTx) attach(ctx context.Context) (string, error) {
	if tx.instant {
		dev, attached, err := tx.loops.attachInstant(ctx, tx.file, tx.readOnly)
		if err != nil {
			return "", volume.Mark(volume.ErrNodeFailed, "attach a loop device: %w", err)
		}
		tx.attached = attached
		return dev, checkLoopMode(dev, tx.readOnly)
	}
	dev, err := tx.loops.find(ctx, tx.file)
	switch {
	case err == nil && dev == "":
		dev, err = tx.loops.attach(ctx, tx.file, tx.readOnly)
		tx.attached = err == nil
	case err == nil:
		err = tx.loops.refresh(ctx, dev)
	}
	if err != nil {
		return "", volume.Mark(volume.ErrNodeFailed, "attach a loop device: %w", err)
	}
	return dev, checkLoopMode(dev, tx.readOnly)
}

// rollback detaches the loop device if this transaction attached it.
func (tx *stageTx) rollback(ctx context.Context) {
	if !tx.attached {
		return
	}
	if err := tx.loops.detach(ctx, tx.file); err != nil {
		klog.ErrorS(err, "rollback of NodeStageVolume: detach loop device", "file", tx.file)
	}
}

// stageMount mounts dev's filesystem at target. It is idempotent when dev is
// already mounted there, refuses to format a device that holds data or a
// restored volume, and, if grow, grows a filesystem smaller than its
// device (not over an instant image: it has the backup's size, and the
// lvol's is reached when it is staged on its data file); a reader-only
// capability mounts with stageReadOnly instead.
func (d *node) stageMount(ctx context.Context, lv backend.LVol, dev, target string, c *csi.VolumeCapability, grow bool) error {
	mnt := c.GetMount()
	fsType := firstNonEmpty(mnt.GetFsType(), volume.Of(lv).FSType, defaultFSType)
	if done, err := stagedAlready(dev, target, fsType); err != nil || done {
		return err
	}
	if err := d.checkFormat(lv, dev, fsType); err != nil {
		return err
	}
	if readerOnly(c) {
		return d.stageReadOnly(ctx, lv.ID, dev, target, fsType, mnt.GetMountFlags())
	}
	if !grow {
		return d.mountOnly(dev, target, fsType, mnt.GetMountFlags())
	}
	if err := d.growExtOffline(dev, fsType); err != nil {
		return volume.Mark(volume.ErrNodeFailed, "grow the %s filesystem on %s to its device size: %w", fsType, dev, err)
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return volume.Mark(volume.ErrNodeFailed, "create staging path: %w", err)
	}
	opts := mountOptions(fsType, mnt.GetMountFlags())
	if err := d.mounter.FormatAndMountSensitiveWithFormatOptions(dev, target, fsType, opts, nil, formatOptions(fsType)); err != nil {
		return volume.Mark(volume.ErrNodeFailed, "format and mount %s at %s as %s: %w", dev, target, fsType, err)
	}
	if err := d.growFS(dev, target); err != nil {
		if uerr := d.mounter.Unmount(target); uerr != nil {
			klog.ErrorS(uerr, "rollback of NodeStageVolume: unmount", "path", target)
		}
		return volume.Mark(volume.ErrNodeFailed, "grow the %s filesystem on %s to its device size: %w", fsType, dev, err)
	}
	return nil
}

// stagedAlready reports whether dev is mounted at target as fsType. Another
// device, or another filesystem type, there is AlreadyExists (CSI spec
// "Volume published but is incompatible").
func stagedAlready(dev, target, fsType string) (bool, error) {
	m, err := mountAt(target)
	if err != nil || m == nil {
		return false, err
	}
	rdev, err := deviceNumber(dev)
	if err != nil {
		return false, volume.Mark(volume.ErrNodeFailed, "%w", err)
	}
	if !onDevice(m, rdev) {
		return false, volume.Mark(volume.ErrMountConflict, "staging path %s already has %s mounted, not this volume's device %s", target, m.Source, dev)
	}
	if m.FsType != fsType {
		return false, volume.Mark(volume.ErrMountConflict, "volume is staged at %s as %s but the request asks for %s", target, m.FsType, fsType)
	}
	return true, nil
}

// checkFormat refuses to mount dev when its filesystem is not fsType, and
// refuses to let a restored volume be formatted: a blank device there means
// the restore did not deliver a filesystem, and formatting would hide it.
func (d *node) checkFormat(lv backend.LVol, dev, fsType string) error {
	found, err := d.mounter.GetDiskFormat(dev)
	if err != nil {
		return volume.Mark(volume.ErrNodeFailed, "detect the filesystem on %s: %w", dev, err)
	}
	if from := volume.Of(lv).RestoredFrom; found == "" && !from.IsZero() {
		return volume.Mark(volume.ErrIncompatible, "volume %s was restored from %s but holds no filesystem; refusing to format restored data (was the backup taken of a block volume?)", lv.ID, from)
	}
	if found != "" && found != fsType {
		return volume.Mark(volume.ErrIncompatible, "volume %s holds a %s filesystem but %s was requested; refusing to format or mount it as %s", lv.ID, found, fsType, fsType)
	}
	return nil
}

// mountOptions adds nouuid for XFS: restores and clones share their source's
// UUID, and XFS refuses a second mount of a UUID on the same node.
func mountOptions(fsType string, flags []string) []string {
	opts := slices.Clone(flags)
	if fsType == "xfs" && !slices.Contains(opts, "nouuid") {
		opts = append(opts, "nouuid")
	}
	return opts
}

// formatOptions make filesystems with 4 KiB sectors (XFS) or blocks (ext):
// a loop device in direct-I/O mode takes the backing file's direct-I/O
// alignment as its logical sector size, which on XFS becomes 4096 once the
// lvol has been reflinked (snapshot, clone). A filesystem made for 512-byte
// sectors would then no longer mount.
func formatOptions(fsType string) []string {
	switch fsType {
	case "xfs":
		return []string{"-s", "size=4096"}
	case "ext3", "ext4":
		return []string{"-b", "4096"}
	}
	return nil
}

// unmountAll unmounts everything stacked on path, keeping the directory
// (the CO removes it), and returns the source of the first mount found.
func (d *node) unmountAll(path string) (string, error) {
	source := ""
	for range maxStacked {
		m, err := mountAt(path)
		if err != nil || m == nil {
			return source, err
		}
		if source == "" {
			source = m.Source
		}
		if err := d.mounter.Unmount(path); err != nil {
			return source, volume.Mark(volume.ErrNodeFailed, "unmount %s: %w", path, err)
		}
	}
	return source, volume.Mark(volume.ErrNodeFailed, "%s is still mounted after %d unmounts", path, maxStacked)
}

// maxStacked bounds unmountAll: more mounts stacked on one path than this
// is not something NodeStageVolume made.
const maxStacked = 8

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
