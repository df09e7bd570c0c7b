package e2e

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/internal/csitest"
)

// instantParams asks CreateVolume for an instant restore.
var instantParams = map[string]string{"restoreMode": "instant"}

// instantReq is restoreReq with restoreMode instant.
func instantReq(name, snapID string, size int64, c *csi.VolumeCapability) *csi.CreateVolumeRequest {
	req := restoreReq(name, snapID, size, c)
	req.Parameters = instantParams
	return req
}

// TestInstantRestoreFilesystem: an ext4 backup restored with restoreMode
// instant behind a target that is down right after CreateVolume answered:
// the volume exists at once; while it hydrates a snapshot, a clone and an
// expansion of it are Unavailable and its health says Hydrating; once the
// target is back it stages over its image, its files read with the
// source's sha256 and a file written and fsynced meanwhile stays; after
// hydration it is an ordinary volume staged on its data file, with every
// file, and nothing of the instant image is left on the node.
func TestInstantRestoreFilesystem(t *testing.T) {
	s3 := startS3(t)
	proxy := startOutageProxy(t, s3.srv.Endpoint)
	n := startDriver(t, "node-a", both(s3.opts(s3.url(proxy.Addr)), noLocalBase))
	id, want := treeBackup(t, n, "inst-src", "ext4", 5, 24*mib)

	start := time.Now()
	resp, err := n.Ctrl.CreateVolume(rpcCtx(t), instantReq("inst-copy", id, volSize, mountCap("ext4")))
	if err != nil {
		t.Fatalf("instant CreateVolume: %v", err)
	}
	v := resp.GetVolume()
	t.Logf("instant CreateVolume answered in %v", time.Since(start))
	back := proxy.outage(4 * time.Second)
	refusedWhileHydrating(t, n, v.GetVolumeId())
	<-back

	rp := stagePublish(t, n.Node, v.GetVolumeId(), mountCap("ext4"))
	if !strings.Contains(stagedBacking(t, rp), "instant") {
		t.Fatalf("hydrating volume staged on %q, want its instant image", stagedBacking(t, rp))
	}
	sameTree(t, "instant restore during hydration", rp.Path, want)
	written := writeSynced(t, filepath.Join(rp.Path, "written-during-hydration"), int(3*mib))
	awaitReady(t, n, v.GetVolumeId())
	unpublishUnstage(t, rp)
	noInstantLeft(t, n, v.GetVolumeId())

	rp = stagePublish(t, n.Node, v.GetVolumeId(), mountCap("ext4"))
	if b := stagedBacking(t, rp); strings.Contains(b, "instant") {
		t.Fatalf("hydrated volume staged on %q, want its data file", b)
	}
	want["written-during-hydration"] = written
	sameTree(t, "instant restore after hydration", rp.Path, want)
	unpublishUnstage(t, rp)
}

// treeBackup makes a volSize volume called name with a filesystem of
// fsType, writes a tree of size bytes (writeTree with seed) in it and
// backs it up as name-b1; it returns the backup's snapshot id and the
// tree's hashes.
func treeBackup(t *testing.T, n *csitest.Node, name, fsType string, seed uint64, size int64) (string, tree) {
	t.Helper()
	src := createVolume(t, n.Ctrl, name, volSize, mountCap(fsType), nil)
	p := stagePublish(t, n.Node, src.GetVolumeId(), mountCap(fsType))
	writeTree(t, p.Path, seed, size)
	want := hashTree(t, p.Path)
	id := backup(t, n.Ctrl, src.GetVolumeId(), name+"-b1", "")
	unpublishUnstage(t, p)
	return id, want
}

// refusedWhileHydrating checks what waits for a hydrating volume: a
// snapshot, a clone and an expansion are Unavailable, and the node's
// health reports it Hydrating.
func refusedWhileHydrating(t *testing.T, n *csitest.Node, volID string) {
	t.Helper()
	_, err := n.Ctrl.CreateSnapshot(rpcCtx(t), &csi.CreateSnapshotRequest{Name: "inst-snap", SourceVolumeId: volID})
	wantCode(t, "snapshot of a hydrating volume", err, codes.Unavailable, "hydrat")
	_, err = n.Ctrl.CreateVolume(rpcCtx(t), &csi.CreateVolumeRequest{Name: "inst-clone",
		CapacityRange: &csi.CapacityRange{RequiredBytes: volSize}, VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4")},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
			Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: volID}}}})
	wantCode(t, "clone of a hydrating volume", err, codes.Unavailable, "hydrat")
	_, err = n.Ctrl.ControllerExpandVolume(rpcCtx(t), &csi.ControllerExpandVolumeRequest{VolumeId: volID,
		CapacityRange: &csi.CapacityRange{RequiredBytes: 2 * volSize}})
	wantCode(t, "expansion of a hydrating volume", err, codes.Unavailable, "hydrat")
	if !hydrating(t, n, volID) {
		t.Fatalf("health of a hydrating volume does not say Hydrating")
	}
	if _, err := n.Ctrl.ControllerGetVolume(rpcCtx(t), &csi.ControllerGetVolumeRequest{VolumeId: volID}); err != nil {
		t.Fatalf("ControllerGetVolume of a hydrating volume: %v", err)
	}
}

// awaitReady waits until volume id's hydration has ended: its health no
// longer says Hydrating, and a snapshot of it is no longer Unavailable.
func awaitReady(t *testing.T, n *csitest.Node, id string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for hydrating(t, n, id) {
		if time.Now().After(deadline) {
			t.Fatalf("volume %s still not hydrated", id)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := n.Ctrl.ControllerExpandVolume(rpcCtx(t), &csi.ControllerExpandVolumeRequest{VolumeId: id,
		CapacityRange: &csi.CapacityRange{RequiredBytes: 1}}); grpcstatus.Code(err) == codes.Unavailable {
		t.Fatalf("hydrated volume %s: expansion still Unavailable: %v", id, err)
	}
}

// hydrating reports whether volume id's health says Hydrating.
func hydrating(t *testing.T, n *csitest.Node, id string) bool {
	t.Helper()
	h, err := n.Node.NodeGetVolumeHealth(rpcCtx(t), &csi.NodeGetVolumeHealthRequest{VolumeId: id})
	if err != nil {
		t.Fatalf("health of %s: %v", id, err)
	}
	for _, e := range h.GetVolumeHealth().GetHealthStatuses() {
		if e.GetReason() == "Hydrating" {
			return true
		}
		if e.GetReason() == "HydrationFailed" {
			t.Fatalf("hydration of %s failed: %s", id, e.GetMessage())
		}
	}
	return false
}

// stagedBacking returns the backing file of the loop device staged for p.
func stagedBacking(t *testing.T, p *published) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(p.staging, &st); err != nil {
		t.Fatal(err)
	}
	dev := filepath.Base(resolveDevice(t, st.Dev))
	b, err := os.ReadFile(filepath.Join("/sys/block", dev, "loop", "backing_file"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// resolveDevice names the block device of number rdev (/sys/dev/block).
func resolveDevice(t *testing.T, rdev uint64) string {
	t.Helper()
	link, err := os.Readlink(fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(rdev), unix.Minor(rdev)))
	if err != nil {
		t.Fatal(err)
	}
	return link
}

// writeSynced writes n random bytes to a new file and fsyncs it; it
// returns the file's hash as hashTree records it.
func writeSynced(t *testing.T, path string, n int) string {
	t.Helper()
	buf := make([]byte, n)
	_, _ = rand.Read(buf)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(buf); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return hashTree(t, filepath.Dir(path))[filepath.Base(path)]
}

// noInstantLeft checks that nothing of volume id's instant image is left:
// no FUSE mount, no loop device over it, no hydration record.
func noInstantLeft(t *testing.T, n *csitest.Node, id string) {
	t.Helper()
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(n.Opts.StateDir, "instant", id)
	if bytes.Contains(mounts, []byte(dir)) {
		t.Errorf("instant image of %s still mounted at %s", id, dir)
	}
	backing, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, b := range backing {
		if f, err := os.ReadFile(b); err == nil && strings.HasPrefix(string(f), dir+"/") {
			t.Errorf("a loop device is still over the instant image of %s: %s", id, b)
		}
	}
	if _, err := os.Stat(filepath.Join(n.Opts.StateDir, "hydration", id+".bits")); !os.IsNotExist(err) {
		t.Errorf("hydration record of %s still there: %v", id, err)
	}
}

// TestInstantRestoreDeleteWhileHydrating: DeleteVolume of an instant
// restore while it hydrates is refused while it is staged
// (FailedPrecondition) and, once unstaged, stops the hydration and leaves
// nothing: no lvol, no record, no mount.
func TestInstantRestoreDeleteWhileHydrating(t *testing.T) {
	s3 := startS3(t)
	proxy := startSlowProxy(t, s3.srv.Endpoint)
	n := startDriver(t, "node-a", both(s3.opts(s3.url(proxy.Addr)), noLocalBase))
	id, _ := blockBackup(t, n, "inst-del-src", outageSize, []int64{0, 128 * mib}, int(64*mib))
	proxy.setDelay(500 * time.Millisecond)
	resp, err := n.Ctrl.CreateVolume(rpcCtx(t), instantReq("inst-del", id, outageSize, blockCap()))
	if err != nil {
		t.Fatalf("instant CreateVolume: %v", err)
	}
	volID := resp.GetVolume().GetVolumeId()
	p := stagePublish(t, n.Node, volID, blockCap())
	_, err = n.Ctrl.DeleteVolume(rpcCtx(t), &csi.DeleteVolumeRequest{VolumeId: volID})
	wantCode(t, "DeleteVolume of a staged hydrating volume", err, codes.FailedPrecondition, "staged")
	unpublishUnstage(t, p)
	if _, err := n.Ctrl.DeleteVolume(rpcCtx(t), &csi.DeleteVolumeRequest{VolumeId: volID}); err != nil {
		t.Fatalf("DeleteVolume of a hydrating volume: %v", err)
	}
	noInstantLeft(t, n, volID)
	if _, err := n.Ctrl.ControllerGetVolume(rpcCtx(t), &csi.ControllerGetVolumeRequest{VolumeId: volID}); grpcstatus.Code(err) != codes.NotFound {
		t.Fatalf("deleted hydrating volume: %v, want NotFound", err)
	}
}

// TestInstantRestoreKilledDriver: the driver is killed (SIGKILL) while an
// instant restore hydrates and the application has written to it; a new
// driver on the same pool and state resumes hydration at its start; the
// old stage is undone by NodeUnstageVolume although its FUSE file died
// with the driver; the volume then holds exactly the backup's bytes plus
// the write the application had fsynced, and every read before the kill
// returned the backup's bytes.
func TestInstantRestoreKilledDriver(t *testing.T) {
	const size = 256 * mib
	r := startRestartRig(t, "inst-kill-src", size)
	id := backup(t, r.first.Ctrl, r.vol.GetVolumeId(), "inst-kill-b1", "")
	expect := expectedImage(t, size)

	resp, err := r.first.Ctrl.CreateVolume(rpcCtx(t), instantReq("inst-kill", id, size, blockCap()))
	if err != nil {
		t.Fatalf("instant CreateVolume: %v", err)
	}
	r.proxy.setDelay(700 * time.Millisecond) // hydration takes seconds
	volID := resp.GetVolume().GetVolumeId()
	p := stagePublish(t, r.first.Node, volID, blockCap())
	readsBackup(t, p.Path, expect, 3*size/4, 8*mib)
	wrote := size/8 + mib // in a stretch of zeros of the source
	patch := make([]byte, mib)
	_, _ = rand.Read(patch)
	writeSyncedAt(t, p.Path, patch, int64(wrote))
	copy(expect[wrote:], patch)
	time.Sleep(time.Second)
	r.first.kill()
	deadRead(t, p.Path, expect, size/2+8*mib)

	r.proxy.setDelay(0)
	second := r.restart(t)
	p.node = second.Node
	unpublishUnstage(t, p) // the dead FUSE file's loop device and mount go
	awaitReady(t, second, volID)
	rp := stagePublish(t, second.Node, volID, blockCap())
	readsBackup(t, rp.Path, expect, 0, size)
	unpublishUnstage(t, rp)
	noInstantLeft(t, second, volID)
}

// expectedImage is the source of startRestartRig as bytes (its
// writeDevice with the same seed, offsets and length).
func expectedImage(t *testing.T, size int64) []byte {
	return deviceBytes(t, size, 9, []int64{0, size / 4, size / 2, 3 * size / 4}, int(size/8))
}

// readsBackup reads n bytes at off of device dev and compares them with
// want.
func readsBackup(t *testing.T, dev string, want []byte, off, n int64) {
	t.Helper()
	f, err := os.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4*mib)
	for pos := off; pos < off+n; pos += int64(len(buf)) {
		got := buf[:min(int64(len(buf)), off+n-pos)]
		if _, err := f.ReadAt(got, pos); err != nil {
			t.Fatalf("read %s at %d: %v", dev, pos, err)
		}
		if !bytes.Equal(got, want[pos:pos+int64(len(got))]) {
			t.Fatalf("%s: bytes at %d differ from the backup's", dev, pos)
		}
	}
}

// writeSyncedAt writes p at off of device dev and fsyncs it.
func writeSyncedAt(t *testing.T, dev string, p []byte, off int64) {
	t.Helper()
	f, err := os.OpenFile(dev, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(p, off); err != nil {
		t.Fatalf("write %s at %d: %v", dev, off, err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("fsync %s: %v", dev, err)
	}
}

// TestInstantRestoreReaderOnly: a claim restored instantly for a reader-only
// access mode (SINGLE_NODE_READER_ONLY: a backup browsed by a pod) stages
// read-only over its image while it hydrates: the backup's files read with
// their sha256, a write is refused, and hydration still ends.
func TestInstantRestoreReaderOnly(t *testing.T) {
	s3 := startS3(t)
	proxy := startSlowProxy(t, s3.srv.Endpoint)
	n := startDriver(t, "node-a", both(s3.opts(s3.url(proxy.Addr)), noLocalBase))
	id, want := treeBackup(t, n, "inst-ro-src", "xfs", 7, 16*mib)

	ro := mountCap("xfs")
	ro.AccessMode.Mode = csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY
	resp, err := n.Ctrl.CreateVolume(rpcCtx(t), instantReq("inst-ro", id, volSize, ro))
	if err != nil {
		t.Fatalf("instant CreateVolume, reader-only: %v", err)
	}
	proxy.setDelay(200 * time.Millisecond)
	volID := resp.GetVolume().GetVolumeId()
	rp := stagePublish(t, n.Node, volID, ro)
	sameTree(t, "reader-only instant restore", rp.Path, want)
	if err := os.WriteFile(filepath.Join(rp.Path, "nope"), []byte("x"), 0o644); err == nil {
		t.Fatal("a write to a reader-only instant restore succeeded")
	}
	proxy.setDelay(0)
	awaitReady(t, n, volID)
	unpublishUnstage(t, rp)
	noInstantLeft(t, n, volID)
}

// deadRead reads 1 MiB at off of dev, whose FUSE server was just killed:
// the read fails (the loop device's I/O error, the failure mode of
// docs/ARCHITECTURE.md rule 10) or, if the page cache still held it,
// returns the backup's bytes; never other bytes. It logs which, and how
// long the read took.
func deadRead(t *testing.T, dev string, want []byte, off int64) {
	t.Helper()
	f, err := os.Open(dev)
	if err != nil {
		t.Logf("open %s after the kill: %v", dev, err)
		return
	}
	defer f.Close()
	buf := make([]byte, mib)
	start := time.Now()
	_, err = f.ReadAt(buf, off)
	took := time.Since(start)
	switch {
	case err != nil:
		t.Logf("read of the volume after the driver's kill failed in %v: %v (the pod's I/O fails until it is staged again)", took, err)
	case !bytes.Equal(buf, want[off:off+int64(len(buf))]):
		t.Fatalf("read after the driver's kill returned bytes other than the backup's")
	default:
		t.Logf("read after the driver's kill answered from the page cache in %v, with the backup's bytes", took)
	}
}
