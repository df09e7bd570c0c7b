package driver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// A volume restored with restoreMode "instant" is staged, while it
// hydrates, on a loop device over the FUSE file that serves its lazy image
// (volume.Manager.ServeInstant: reads of blocks not yet hydrated fetch them
// first, writes go to the lvol). Once hydration has ended it is an ordinary
// lvol, and the next stage attaches its data file directly; the filesystem
// is then grown to the lvol if the claim asked for more than the backup.

// deviceOf returns the loop device that serves volume id on this node: the
// one over its data file, or the one over its instant image while it is
// staged hydrating; "" when neither is attached. Errors: losetup's.
func (d *core) deviceOf(ctx context.Context, id, file string) (string, error) {
	dev, err := d.loops.find(ctx, file)
	if err != nil || dev != "" {
		return dev, err
	}
	if devs := loopsBacking(d.vols.InstantFile(id)); len(devs) > 0 {
		return devs[0], nil
	}
	return "", nil
}

// loopsBacking returns the loop devices whose backing file is path, read
// from sysfs (/sys/block/loopN/loop/backing_file) rather than with losetup
// --associated, which stats path: the FUSE file of a killed driver answers
// ENOTCONN, and the loop device over it must still be found to be detached.
// In device order (sysLoops).
func loopsBacking(path string) []string {
	var devs []string
	for _, name := range sysLoops() {
		b, err := os.ReadFile(filepath.Join("/sys/block", name, "loop", "backing_file"))
		if err == nil && strings.TrimSpace(string(b)) == path { // unbound: no such file
			devs = append(devs, "/dev/"+name)
		}
	}
	return devs
}

// attachInstant returns the loop device over the FUSE file of hydrating
// volume id, attaching one if none is: buffered (a FUSE file takes no
// O_DIRECT here: its server has no writeback cache, every write reaches
// it), with the 4096-byte sectors of every chainvol loop device so that
// the filesystem sees the geometry it will see on the lvol itself.
// readOnly attaches it read-only (a reader-only access mode).
func (l *loopDevices) attachInstant(ctx context.Context, file string, readOnly bool) (dev string, attached bool, err error) {
	if devs := loopsBacking(file); len(devs) > 0 {
		return devs[0], false, nil
	}
	args := []string{"--find", "--show", "--sector-size", "4096"}
	if readOnly {
		args = append(args, "--read-only")
	}
	out, err := l.exec.CommandContext(ctx, "losetup", append(args, file)...).CombinedOutput()
	if err != nil {
		return "", false, fmt.Errorf("losetup %s %s: %v: %s", strings.Join(args, " "), file, err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), true, nil
}

// detachInstant detaches every loop device over volume id's instant image
// and stops serving it (volume.Manager.ReleaseInstant), also after a
// driver restart, whose FUSE file no longer answers. Nothing attached and
// nothing served is success; so is a device still mounted at another
// staging path, left attached and served for that path's unstage.
func (d *core) detachInstant(ctx context.Context, id string) error {
	if !d.vols.InstantServed(id) {
		return nil
	}
	devs := loopsBacking(d.vols.InstantFile(id))
	if stagedElsewhere(devs) {
		return nil // the last unstage detaches and releases
	}
	for _, dev := range devs {
		if out, err := d.loops.exec.CommandContext(ctx, "losetup", "--detach", dev).CombinedOutput(); err != nil {
			return volume.Mark(volume.ErrNodeFailed, "losetup --detach %s: %v: %s", dev, err, strings.TrimSpace(string(out)))
		}
	}
	return d.vols.ReleaseInstant(id)
}

// onInstant reports whether NodeStageVolume of lv goes through its instant
// image: it hydrates, or a loop device over the image is still there (lv
// was staged before its hydration ended). A stage must then join that
// device: a second loop device over the data file would mount one
// filesystem through two devices, two journals writing one disk
// (TestInstantStageAfterReadyWhileStaged).
func (d *node) onInstant(lv backend.LVol) bool {
	return volume.Of(lv).Phase == volume.PhaseHydrating || len(loopsBacking(d.vols.InstantFile(lv.ID))) > 0
}

// stagedElsewhere reports whether one of the loop devices devs is still
// mounted (the volume staged at another path): detaching it would only
// mark it for autoclear, and the FUSE file under it could not be unmounted
// (EBUSY).
func stagedElsewhere(devs []string) bool {
	for _, dev := range devs {
		rdev, err := deviceNumber(dev)
		if err != nil {
			continue
		}
		if mounts, err := mountsOf(dev, rdev); err == nil && len(mounts) > 0 {
			return true
		}
	}
	return false
}

// serveInstant points tx at the FUSE file of volume lv (onInstant),
// serving its image if it is not served yet; a volume whose hydration has
// just ended, and that nothing is staged over, keeps tx on its data file.
// A loop device left over a FUSE file this driver does not serve (a
// killed driver's: every I/O fails) is ErrInUse while mounted: staging on
// it would answer OK over a dead device, staging beside it mounts the
// filesystem twice; its unstage clears it. Mounted nowhere (a stage the
// kill interrupted, which the kubelet retries and never unstages, or an
// unpublished block stage) it is detached first.
func (d *node) serveInstant(ctx context.Context, lv backend.LVol, tx *stageTx) error {
	if devs := loopsBacking(d.vols.InstantFile(lv.ID)); len(devs) > 0 && !d.vols.ServingInstant(lv.ID) {
		if stagedElsewhere(devs) {
			return volume.Mark(volume.ErrInUse, "volume %s is still staged on %s over the instant image of a driver that has since stopped (its I/O fails); unstage it first, then stage it again", lv.ID, devs[0])
		}
		if err := d.detachInstant(ctx, lv.ID); err != nil {
			return err
		}
	}
	file, err := d.vols.ServeInstant(ctx, lv)
	if err != nil || file == "" {
		return err
	}
	tx.file, tx.instant = file, true
	return nil
}

// rollbackStage undoes what a failed NodeStageVolume attached: its loop
// device, and the instant image it began to serve.
func (d *node) rollbackStage(ctx context.Context, id string, tx *stageTx) {
	if !tx.instant {
		tx.rollback(ctx)
		return
	}
	if !tx.attached && len(loopsBacking(tx.file)) > 0 {
		return // staged before this call: left as it was
	}
	if err := d.detachInstant(ctx, id); err != nil {
		klog.ErrorS(err, "rollback of NodeStageVolume: release the instant image", "volume", id)
	}
}

// mountOnly mounts dev's filesystem at target as it is (an instant
// image: neither formatted, which checkFormat refuses for a restored
// volume anyway, nor grown).
func (d *node) mountOnly(dev, target, fsType string, flags []string) error {
	if err := os.MkdirAll(target, 0o750); err != nil {
		return volume.Mark(volume.ErrNodeFailed, "create staging path: %w", err)
	}
	if err := d.mounter.Mount(dev, target, fsType, mountOptions(fsType, flags)); err != nil {
		return volume.Mark(volume.ErrNodeFailed, "mount %s at %s as %s: %w", dev, target, fsType, err)
	}
	return nil
}

// instantExpandable refuses to grow a volume that hydrates (ErrHydrating,
// Unavailable: retried until it has finished) or is still staged over its
// instant image, whose size is the backup's (ErrInUse: it grows once
// staged again, on its data file).
func (d *node) instantExpandable(lv backend.LVol) error {
	if volume.Of(lv).Phase == volume.PhaseHydrating {
		return fmt.Errorf("volume %s: %w", lv.ID, volume.ErrHydrating)
	}
	if len(loopsBacking(d.vols.InstantFile(lv.ID))) > 0 {
		return volume.Mark(volume.ErrInUse, "volume %s is staged over the image of its instant restore, which keeps the backup's size; unstage and stage it again to expand it", lv.ID)
	}
	return nil
}

// hydrationHealth reports a volume that an instant restore still hydrates:
// DEGRADED "Hydrating" with its progress (reads of blocks not yet here
// wait for a GET), or DEGRADED "HydrationFailed" with the job's error
// (the blocks it could not fetch fail their reads until it resumes).
func (d *core) hydrationHealth(lv backend.LVol) []*csi.VolumeHealth_VolumeHealthEntry {
	if volume.Of(lv).Phase != volume.PhaseHydrating {
		return nil
	}
	id := lv.ID
	done, total, ok, err := d.vols.HydrationProgress(lv.Name)
	switch {
	case !ok:
		return []*csi.VolumeHealth_VolumeHealthEntry{healthEntry(csi.VolumeHealthErrorType_DEGRADED, "Hydrating",
			fmt.Sprintf("volume %s is restored instantly from %s and its hydration has not started on this node yet", id, volume.Of(lv).RestoreRef))}
	case err != nil:
		return []*csi.VolumeHealth_VolumeHealthEntry{healthEntry(csi.VolumeHealthErrorType_DEGRADED, "HydrationFailed",
			fmt.Sprintf("hydration of volume %s stopped: %v; reads of the block it could not fetch fail (EIO), other blocks are still fetched when read; it starts again when the driver restarts", id, err))}
	}
	pct := 0.0
	if total > 0 {
		pct = 100 * float64(done) / float64(total)
	}
	return []*csi.VolumeHealth_VolumeHealthEntry{healthEntry(csi.VolumeHealthErrorType_DEGRADED, "Hydrating",
		fmt.Sprintf("volume %s is restored instantly from %s: %d of %d bytes hydrated (%.0f%%); reads of the rest fetch from the backup first", id, volume.Of(lv).RestoreRef, done, total, pct))}
}
