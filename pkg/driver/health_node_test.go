package driver

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/volume"
)

// health asks NodeGetVolumeHealth about id at its staging and publish paths.
func (e *nodeEnv) health(t *testing.T, id, staging, publish string) *csi.VolumeHealth {
	t.Helper()
	resp, err := e.d.NodeGetVolumeHealth(e.ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: id,
		StagingTargetPath: staging, VolumePublishPath: publish})
	mustOK(t, err)
	return resp.GetVolumeHealth()
}

// wantReasons fails the test unless h's entries carry exactly reasons, each
// with a message that names the volume.
func wantReasons(t *testing.T, h *csi.VolumeHealth, reasons ...string) {
	t.Helper()
	var got []string
	for _, s := range h.GetHealthStatuses() {
		got = append(got, s.GetReason())
		if !strings.Contains(s.GetMessage(), h.GetVolumeId()) {
			t.Errorf("%s: message %q does not name volume %s", s.GetReason(), s.GetMessage(), h.GetVolumeId())
		}
	}
	slices.Sort(got)
	slices.Sort(reasons)
	if !slices.Equal(got, reasons) {
		t.Fatalf("health reasons = %v (%v), want %v", got, h.GetHealthStatuses(), reasons)
	}
}

// stagePublished stages and publishes a fresh volume of fsType ("" for raw
// block) for mode and returns its id and paths.
func (e *nodeEnv) stagePublished(t *testing.T, name, fsType string, mode csi.VolumeCapability_AccessMode_Mode) (id, staging, target string) {
	t.Helper()
	access, c := accessMount, mountCap(fsType, mode)
	if fsType == "" {
		access, c = accessBlock, blockCap(mode)
	}
	lv := e.volume(name, volume.Record{FSType: fsType, AccessType: access}.Encode())
	if mode == snro {
		e.fillVolume(t, lv.ID, fsType)
	}
	staging, target = e.path("stage-"+name), e.path("pods/"+name+"/target")
	mustOK(t, os.MkdirAll(staging, 0o750)) // the CO's part (a block stage mounts nothing there)
	mustOK(t, e.stage(lv.ID, staging, c))
	mustOK(t, e.publish(lv.ID, staging, target, c, false))
	return lv.ID, staging, target
}

// TestNodeVolumeHealthNormal: healthy ext4, XFS and raw block volumes,
// staged for writers or reader-only, and a read-only publish of a writer's
// volume, answer no entries: read-only by design is not a failure.
func TestNodeVolumeHealthNormal(t *testing.T) {
	e := newNodeEnv(t)
	for _, tc := range []struct {
		fsType string
		mode   csi.VolumeCapability_AccessMode_Mode
	}{{"ext4", snw}, {"xfs", snw}, {"", snw}, {"ext4", snro}, {"xfs", snro}, {"", snro}} {
		name := firstNonEmpty(tc.fsType, "block") + map[bool]string{true: "-ro"}[tc.mode == snro]
		t.Run(name, func(t *testing.T) {
			id, staging, target := e.stagePublished(t, name, tc.fsType, tc.mode)
			wantReasons(t, e.health(t, id, staging, target))
			wantReasons(t, e.health(t, id, staging, ""))
			if tc.fsType != "" && tc.mode == snw {
				roTarget := e.path("pods/" + name + "/ro")
				mustOK(t, e.publish(id, staging, roTarget, mountCap(tc.fsType, snw), true))
				wantReasons(t, e.health(t, id, staging, roTarget))
				mustOK(t, e.unpublish(id, roTarget))
			}
			mustOK(t, e.unpublish(id, target))
			mustOK(t, e.unstage(id, staging))
		})
	}
}

// TestNodeVolumeHealthShutdown: an XFS shut down under a staged volume (as
// after a metadata I/O error; every read then fails with EIO, statfs does
// not) is INACCESSIBLE, FilesystemIOError, at the staging and publish paths.
func TestNodeVolumeHealthShutdown(t *testing.T) {
	e := newNodeEnv(t)
	id, staging, target := e.stagePublished(t, "shut", "xfs", snw)
	testutil.Run(t, "xfs_io", "-x", "-c", "shutdown", staging)
	h := e.health(t, id, staging, target)
	wantReasons(t, h, "FilesystemIOError")
	if s := h.GetHealthStatuses()[0]; s.GetStatus() != csi.VolumeHealthErrorType_INACCESSIBLE || !strings.Contains(s.GetMessage(), "input/output error") {
		t.Errorf("entry %v: want INACCESSIBLE naming the I/O error", s)
	}
	wantReasons(t, e.health(t, id, "", target), "FilesystemIOError")
	mustOK(t, e.unpublish(id, target))
	mustOK(t, e.unstage(id, staging))
}

// TestNodeVolumeHealthRemountedReadOnly: an ext4 staged read-write and
// remounted read-only (what errors=remount-ro does after an error) is
// DEGRADED, FilesystemReadOnly; back read-write, it is healthy again.
func TestNodeVolumeHealthRemountedReadOnly(t *testing.T) {
	e := newNodeEnv(t)
	id, staging, target := e.stagePublished(t, "remount", "ext4", snw)
	testutil.Run(t, "mount", "-o", "remount,ro", staging)
	h := e.health(t, id, staging, target)
	wantReasons(t, h, "FilesystemReadOnly")
	if s := h.GetHealthStatuses()[0]; s.GetStatus() != csi.VolumeHealthErrorType_DEGRADED || !strings.Contains(s.GetMessage(), staging) {
		t.Errorf("entry %v: want DEGRADED naming %s", s, staging)
	}
	testutil.Run(t, "mount", "-o", "remount,rw", staging)
	wantReasons(t, e.health(t, id, staging, target))
	mustOK(t, e.unpublish(id, target))
	mustOK(t, e.unstage(id, staging))
}

// TestNodeVolumeHealthLoopSwitched: the loop device under a staged mount no
// longer backs the lvol's data file (LOOP_CHANGE_FD, which the kernel allows
// on read-only devices, switched it to a copy): INACCESSIBLE,
// LoopDeviceDetached, although the mount and its reads still work.
func TestNodeVolumeHealthLoopSwitched(t *testing.T) {
	e := newNodeEnv(t)
	id, staging, target := e.stagePublished(t, "switched", "ext4", snro)
	dev := e.loopOf(id)
	cp := filepath.Join(e.poolDir, "copy.img")
	testutil.Run(t, "cp", "--sparse=always", mustFile(t, e.pool, id), cp)
	changeFD(t, dev, cp)
	t.Cleanup(func() { _ = os.Remove(cp) })
	wantReasons(t, e.health(t, id, staging, target), "LoopDeviceDetached")
	mustOK(t, e.unpublish(id, target))
	mustOK(t, e.unstage(id, staging))
	testutil.Run(t, "losetup", "--detach", dev) // bound to the copy: unstage does not know it
}

// loopChangeFD is LOOP_CHANGE_FD (linux/loop.h), which x/sys/unix lacks.
const loopChangeFD = 0x4C06

// changeFD rebinds the read-only loop device dev to file (LOOP_CHANGE_FD).
func changeFD(t *testing.T, dev, file string) {
	t.Helper()
	d, err := os.Open(dev)
	mustOK(t, err)
	defer d.Close()
	f, err := os.Open(file)
	mustOK(t, err)
	defer f.Close()
	mustOK(t, unix.IoctlSetInt(int(d.Fd()), loopChangeFD, int(f.Fd())))
}

// TestNodeVolumeHealthBlockDetached: a raw block volume whose loop device
// was detached is INACCESSIBLE, LoopDeviceMissing.
func TestNodeVolumeHealthBlockDetached(t *testing.T) {
	e := newNodeEnv(t)
	id, staging, target := e.stagePublished(t, "detached", "", snw)
	mustOK(t, e.unpublish(id, target))
	testutil.Run(t, "losetup", "--detach", e.loopOf(id))
	wantReasons(t, e.health(t, id, staging, ""), "LoopDeviceMissing")
	mustOK(t, e.unstage(id, staging))
}

// TestNodeVolumeHealthDataFileMissing: a staged volume whose data file was
// removed from the pool is DATA_LOSS, LvolMissing.
func TestNodeVolumeHealthDataFileMissing(t *testing.T) {
	e := newNodeEnv(t)
	id, staging, target := e.stagePublished(t, "gone", "ext4", snw)
	dev := e.loopOf(id)
	mustOK(t, os.Remove(mustFile(t, e.pool, id)))
	h := e.health(t, id, staging, target)
	wantReasons(t, h, "LvolMissing")
	if s := h.GetHealthStatuses()[0]; s.GetStatus() != csi.VolumeHealthErrorType_DATA_LOSS {
		t.Errorf("entry %v: want DATA_LOSS", s)
	}
	testutil.Run(t, "umount", target)
	testutil.Run(t, "umount", staging)
	testutil.Run(t, "losetup", "--detach", dev)
}

// TestNodeVolumeHealthPoolIOError shuts down the pool's own filesystem
// under a staged ext4 volume: every read of the volume's device now fails
// with EIO while ext4 itself, serving from its caches, still answers
// statfs. The volume is INACCESSIBLE: the pool fails to read its lvol, and
// a direct read of its device fails, each entry naming the I/O error.
func TestNodeVolumeHealthPoolIOError(t *testing.T) {
	e := newNodeEnv(t)
	id, staging, target := e.stagePublished(t, "eio", "ext4", snw)
	dev := e.loopOf(id)
	testutil.Run(t, "xfs_io", "-x", "-c", "shutdown", filepath.Dir(e.poolDir))
	t.Cleanup(func() { // the pool can no longer answer unstage
		_ = exec.Command("umount", target).Run()
		_ = exec.Command("umount", staging).Run()
		_ = exec.Command("losetup", "--detach", dev).Run()
	})
	h := e.health(t, id, staging, target)
	got := map[string]*csi.VolumeHealth_VolumeHealthEntry{}
	for _, s := range h.GetHealthStatuses() {
		got[s.GetReason()] = s
	}
	// ext4 may or may not still read its root directory from its cache.
	delete(got, "FilesystemIOError")
	if len(got) != 2 || got["PoolIOError"] == nil || got["DeviceIOError"] == nil {
		t.Fatalf("health = %v; want PoolIOError and DeviceIOError (and perhaps FilesystemIOError)", h)
	}
	for _, s := range got {
		if s.GetStatus() != csi.VolumeHealthErrorType_INACCESSIBLE || !strings.Contains(s.GetMessage(), "input/output error") {
			t.Errorf("entry %v: want INACCESSIBLE naming the I/O error", s)
		}
	}
	if !strings.Contains(got["DeviceIOError"].GetMessage(), dev) {
		t.Errorf("DeviceIOError %q does not name the device %s", got["DeviceIOError"].GetMessage(), dev)
	}
}
