package e2e

import (
	"crypto/rand"
	"errors"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/driver"
	"github.com/chainvol/chainvol/pkg/s3chain"

	"github.com/chainvol/chainvol/internal/csitest"
)

// instantFS is an ext4 backup of a small tree on a driver whose target is
// behind a slow proxy: what the tests below restore instantly.
type instantFS struct {
	n     *csitest.Node
	proxy *slowProxy
	id    string // the backup's snapshot id
	want  tree   // the source's files
}

// startInstantFS backs up an ext4 volume called name holding 24 MiB of
// files, with the proxy not delaying yet.
func startInstantFS(t *testing.T, name string) instantFS {
	s3 := startS3(t)
	f := instantFS{proxy: startSlowProxy(t, s3.srv.Endpoint)}
	f.n = startDriver(t, "node-a", both(s3.opts(s3.url(f.proxy.Addr)), noLocalBase))
	src := createVolume(t, f.n.Ctrl, name, volSize, mountCap("ext4"), nil)
	p := stagePublish(t, f.n.Node, src.GetVolumeId(), mountCap("ext4"))
	writeTree(t, p.Path, 7, 24*mib)
	f.want = hashTree(t, p.Path)
	unpublishUnstage(t, p) // a clean journal: a reader-only stage needs no replay
	f.id = backup(t, f.n.Ctrl, src.GetVolumeId(), name+"-b1", "")
	return f
}

// restore creates the instant restore called name of the backup and
// returns its volume id.
func (f instantFS) restore(t *testing.T, name string, c *csi.VolumeCapability) string {
	t.Helper()
	return createInstant(t, f.n.Ctrl, name, f.id, volSize, c)
}

// slowDriver is a driver with no local restore base whose target,
// versitygw, is behind a slow proxy.
func slowDriver(t *testing.T) (*csitest.Node, *slowProxy) {
	s3 := startS3(t)
	proxy := startSlowProxy(t, s3.srv.Endpoint)
	return startDriver(t, "node-a", both(s3.opts(s3.url(proxy.Addr)), noLocalBase)), proxy
}

// createInstant asks ctrl for the instant restore called name of backup
// id and returns its volume id.
func createInstant(t *testing.T, ctrl csi.ControllerClient, name, id string, size int64, c *csi.VolumeCapability) string {
	t.Helper()
	resp, err := ctrl.CreateVolume(rpcCtx(t), instantReq(name, id, size, c))
	if err != nil {
		t.Fatalf("instant CreateVolume %s: %v", name, err)
	}
	return resp.GetVolume().GetVolumeId()
}

// stagedDevice is the device number of the filesystem staged at path.
func stagedDevice(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Dev
}

// TestInstantStageAfterReadyWhileStaged: a hydrating volume staged at two
// paths is on one device, and unstaging one leaves the other working. A
// volume staged over its instant image stays there when hydration ends
// (no live switch). While hydrating, NodeExpandVolume and a backup are
// Unavailable; once hydrated the controller expands it, and the node,
// while it is still over its image, refuses (FailedPrecondition). Then the
// kubelet's retry of NodeStageVolume at the same path is OK, and a stage
// at a second path mounts the same device: never a second loop device
// over the data file, which would mount one ext4 twice through two
// devices (two journals over one disk: corruption).
func TestInstantStageAfterReadyWhileStaged(t *testing.T) {
	f := startInstantFS(t, "twice-src")
	f.proxy.setDelay(time.Second)
	volID := f.restore(t, "twice", mountCap("ext4"))
	a := stagePublish(t, f.n.Node, volID, mountCap("ext4"))
	if !hydrating(t, f.n, volID) {
		t.Fatal("hydrated already: the test proves nothing")
	}
	expandNode := func() error {
		_, err := f.n.Node.NodeExpandVolume(rpcCtx(t), &csi.NodeExpandVolumeRequest{VolumeId: volID, VolumePath: a.Path,
			CapacityRange: &csi.CapacityRange{RequiredBytes: 2 * volSize}})
		return err
	}
	wantCode(t, "NodeExpandVolume of a hydrating volume", expandNode(), codes.Unavailable, "hydrat")
	_, err := f.n.Ctrl.CreateSnapshot(rpcCtx(t), &csi.CreateSnapshotRequest{Name: "twice-bk", SourceVolumeId: volID, Parameters: backupParams("")})
	wantCode(t, "backup of a hydrating volume", err, codes.Unavailable, "hydrat")
	f.want["written"] = writeSynced(t, a.Path+"/written", int(2*mib))
	c := stagePublish(t, f.n.Node, volID, mountCap("ext4")) // while hydrating
	if da, dc := stagedDevice(t, a.staging), stagedDevice(t, c.staging); da != dc {
		t.Fatalf("two stages of a hydrating volume on two devices (%s, %s)", stagedBacking(t, a), stagedBacking(t, c))
	}
	unpublishUnstage(t, c) // a stays staged, and its image served
	sameTree(t, "first stage after the second's unstage", a.Path, f.want)
	f.proxy.setDelay(0)
	awaitReady(t, f.n, volID)
	if _, err := f.n.Ctrl.ControllerExpandVolume(rpcCtx(t), &csi.ControllerExpandVolumeRequest{VolumeId: volID,
		CapacityRange: &csi.CapacityRange{RequiredBytes: 2 * volSize}}); err != nil {
		t.Fatalf("ControllerExpandVolume of a hydrated volume: %v", err)
	}
	wantCode(t, "NodeExpandVolume of a volume staged over its image", expandNode(), codes.FailedPrecondition, "stage it again")

	if _, err := f.n.Node.NodeStageVolume(rpcCtx(t), &csi.NodeStageVolumeRequest{
		VolumeId: volID, StagingTargetPath: a.staging, VolumeCapability: mountCap("ext4"),
	}); err != nil {
		t.Errorf("NodeStageVolume retried at the same path after hydration ended: %v", err)
	}
	b := stagePublish(t, f.n.Node, volID, mountCap("ext4"))
	if da, db := stagedDevice(t, a.staging), stagedDevice(t, b.staging); da != db {
		t.Fatalf("second stage on device %d:%d (%s), the first on %d:%d (%s): one filesystem mounted through two devices",
			unix.Major(db), unix.Minor(db), stagedBacking(t, b), unix.Major(da), unix.Minor(da), stagedBacking(t, a))
	}
	sameTree(t, "second stage", b.Path, f.want)
	unpublishUnstage(t, b)
	unpublishUnstage(t, a)
	noInstantLeft(t, f.n, volID)
	c = stagePublish(t, f.n.Node, volID, mountCap("ext4"))
	sameTree(t, "stage after both unstaged", c.Path, f.want)
	if got := fsTotal(t, f.n, volID, c.Path); got <= volSize {
		t.Errorf("filesystem of %d bytes staged on the data file of a volume expanded to %d", got, 2*volSize)
	}
	unpublishUnstage(t, c)
}

// readerCap is a SINGLE_NODE_READER_ONLY mount capability of fsType.
func readerCap(fsType string) *csi.VolumeCapability {
	c := mountCap(fsType)
	c.AccessMode.Mode = csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY
	return c
}

// TestInstantReaderOnlyWhileHydrating: an instant restore claimed
// reader-only is staged over its image on a read-only loop device,
// mounted read-only (a write is EROFS), and its files read with the
// source's sha256 while it hydrates; once hydrated and unstaged nothing of
// the image is left, and a new stage on the data file reads the same.
func TestInstantReaderOnlyWhileHydrating(t *testing.T) {
	f := startInstantFS(t, "ro-src")
	f.proxy.setDelay(300 * time.Millisecond)
	volID := f.restore(t, "ro", readerCap("ext4"))
	p := stagePublish(t, f.n.Node, volID, readerCap("ext4"))
	if !hydrating(t, f.n, volID) {
		t.Fatal("reader-only instant restore already hydrated: the test proves nothing")
	}
	var st unix.Statfs_t
	if err := unix.Statfs(p.Path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Flags&unix.ST_RDONLY == 0 {
		t.Errorf("reader-only stage of a hydrating volume is mounted read-write (flags %#x)", st.Flags)
	}
	if err := os.WriteFile(filepath.Join(p.Path, "x"), []byte("x"), 0o600); !errors.Is(err, unix.EROFS) {
		t.Errorf("write to a reader-only stage: %v, want EROFS", err)
	}
	sameTree(t, "reader-only stage while hydrating", p.Path, f.want)
	f.proxy.setDelay(0)
	awaitReady(t, f.n, volID)
	unpublishUnstage(t, p)
	noInstantLeft(t, f.n, volID)
	p = stagePublish(t, f.n.Node, volID, readerCap("ext4"))
	sameTree(t, "reader-only stage after hydration", p.Path, f.want)
	unpublishUnstage(t, p)
}

// TestInstantStageOverKilledDriversImage: the driver is killed while a
// hydrating volume is staged over its FUSE file; the next driver refuses a
// NodeStageVolume (the kubelet's retry at the same path) with
// FailedPrecondition rather than answering OK over the dead loop device,
// and once the dead stage is unstaged a new stage reads the backup.
func TestInstantStageOverKilledDriversImage(t *testing.T) {
	const size = 256 * mib
	second, volID, p := killedWhileStaged(t, "inst-dead", size, false)
	_, err := second.Node.NodeStageVolume(rpcCtx(t), &csi.NodeStageVolumeRequest{
		VolumeId: volID, StagingTargetPath: p.staging, VolumeCapability: blockCap()})
	wantCode(t, "NodeStageVolume over a killed driver's instant image", err, codes.FailedPrecondition, "unstage")
	unpublishUnstage(t, p)
	rp := stagePublish(t, second.Node, volID, blockCap())
	readsBackup(t, rp.Path, expectedImage(t, size), 0, size)
	awaitReady(t, second, volID)
	unpublishUnstage(t, rp)
	noInstantLeft(t, second, volID)
}

// killedWhileStaged is an instant restore of size bytes called name
// (startRestartRig's source) staged, hydrating slowly, and published
// unless unpublish, when its driver is killed; it returns the next driver,
// the volume and its stage (on the next driver).
func killedWhileStaged(t *testing.T, name string, size int64, unpublish bool) (*csitest.Node, string, *published) {
	t.Helper()
	r := startRestartRig(t, name+"-src", size)
	id := backup(t, r.first.Ctrl, r.vol.GetVolumeId(), name+"-b1", "")
	volID := createInstant(t, r.first.Ctrl, name, id, size, blockCap())
	r.proxy.setDelay(700 * time.Millisecond)
	p := stagePublish(t, r.first.Node, volID, blockCap())
	if unpublish {
		if _, err := r.first.Node.NodeUnpublishVolume(rpcCtx(t), &csi.NodeUnpublishVolumeRequest{VolumeId: volID, TargetPath: p.Path}); err != nil {
			t.Fatal(err)
		}
	}
	r.first.kill()
	r.proxy.setDelay(0)
	second := r.restart(t)
	p.node = second.Node
	return second, volID, p
}

// TestInstantCorruptBlock: a block object of the backup corrupted in the
// target: the hydration job ends and the health says HydrationFailed; a
// read of that block through the staged image fails (EIO) and every other
// read returns the backup's bytes, never others, also of blocks the job
// had not fetched when it ended; the volume stays hydrating
// (a snapshot is Unavailable); unstaged, it is deleted leaving nothing.
func TestInstantCorruptBlock(t *testing.T) {
	const size = 256 * mib
	n := startDriver(t, "node-a", noLocalBase)
	offsets := []int64{0, 64 * mib, 160 * mib}
	id, want := blockBackupBytes(t, n, "inst-bad-src", offsets, 16*mib)
	_, chain, _ := splitBackupID(t, id)
	flipByte(t, largestFile(t, filepath.Join(n.Opts.StateDir, "backups", filepath.FromSlash(s3chain.BlockPrefix(chain)))))

	volID := createInstant(t, n.Ctrl, "inst-bad", id, size, blockCap())
	p := stagePublish(t, n.Node, volID, blockCap())
	awaitHealth(t, n, volID, "HydrationFailed")
	if h := hydrationState(t, n, volID); strings.Contains(h, "not fetched yet fail") {
		t.Errorf("health says reads of every block not fetched yet fail, but only the corrupt one's do: %s", h)
	}
	// After the job ended: the blocks it left are fetched by the reads.
	if bad := readsBackupOrEIO(t, p.Path, want); bad == 0 || bad > 4 {
		t.Fatalf("%d reads of 1 MiB failed, want those of the one corrupt block (1 to 4 MiB)", bad)
	}
	_, err := n.Ctrl.CreateSnapshot(rpcCtx(t), &csi.CreateSnapshotRequest{Name: "inst-bad-snap", SourceVolumeId: volID})
	wantCode(t, "snapshot of a volume whose hydration failed", err, codes.Unavailable, "hydrat")
	unpublishUnstage(t, p)
	if _, err := n.Ctrl.DeleteVolume(rpcCtx(t), &csi.DeleteVolumeRequest{VolumeId: volID}); err != nil {
		t.Fatalf("DeleteVolume: %v", err)
	}
	noInstantLeft(t, n, volID)
}

// readsBackupOrEIO reads device dev in 1 MiB reads (O_DIRECT: no
// readahead spreads a failure over its neighbours) and fails the test on
// any read that returns bytes other than want's or an error other than
// EIO; it returns how many reads were EIO.
func readsBackupOrEIO(t *testing.T, dev string, want []byte) (eio int) {
	t.Helper()
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	buf, err := unix.Mmap(-1, 0, int(mib), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil { // page-aligned, as O_DIRECT wants
		t.Fatal(err)
	}
	defer unix.Munmap(buf)
	for off := int64(0); off < int64(len(want)); off += mib {
		_, err := unix.Pread(fd, buf, off)
		switch {
		case errors.Is(err, unix.EIO):
			eio++
		case err != nil:
			t.Fatalf("read %s at %d: %v, want the backup's bytes or EIO", dev, off, err)
		case string(buf) != string(want[off:off+mib]):
			t.Fatalf("read %s at %d: bytes other than the backup's", dev, off)
		}
	}
	t.Logf("%d of %d reads failed with EIO", eio, int64(len(want))/mib)
	return eio
}

// awaitHealth waits up to a minute for volume id's node health to report
// reason (Hydrating, HydrationFailed).
func awaitHealth(t *testing.T, n *csitest.Node, id, reason string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		h := hydrationState(t, n, id)
		if strings.HasPrefix(h, reason+": ") {
			t.Logf("health of %s: %s", id, h)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("health of %s never said %s: %q", id, reason, h)
		}
	}
}

// blockBackupBytes is blockBackup of a volume of 256 MiB with chunk bytes
// at each offset, returning its snapshot id and its bytes.
func blockBackupBytes(t *testing.T, n *csitest.Node, name string, offsets []int64, chunk int64) (string, []byte) {
	t.Helper()
	id, _ := blockBackup(t, n, name, 256*mib, offsets, int(chunk))
	return id, deviceBytes(t, 256*mib, 5, offsets, int(chunk))
}

// deviceBytes is what writeDevice with seed, offsets and n writes over a
// blank device of size bytes.
func deviceBytes(t *testing.T, size int64, seed uint64, offsets []int64, n int) []byte {
	t.Helper()
	f := filepath.Join(t.TempDir(), "expected")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(f, size); err != nil {
		t.Fatal(err)
	}
	writeDevice(t, f, seed, offsets, n)
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestInstantRetryAndDeleteRightAway: a CreateVolume retried many times
// while the volume hydrates and is written answers the same volume and
// starts nothing twice (its bytes after hydration are the backup's and the
// write); an instant restore deleted right after CreateVolume answered
// (no stage) leaves nothing, however soon.
func TestInstantRetryAndDeleteRightAway(t *testing.T) {
	const size = 256 * mib
	n, proxy := slowDriver(t)
	offsets := []int64{0, 64 * mib, 160 * mib}
	id, want := blockBackupBytes(t, n, "inst-retry-src", offsets, 16*mib)
	proxy.setDelay(200 * time.Millisecond)

	for i, wait := range []time.Duration{0, time.Millisecond, 20 * time.Millisecond, 300 * time.Millisecond} {
		resp, err := n.Ctrl.CreateVolume(rpcCtx(t), instantReq("inst-gone-"+itoa(i), id, size, blockCap()))
		if err != nil {
			t.Fatalf("instant CreateVolume: %v", err)
		}
		time.Sleep(wait)
		gone := resp.GetVolume().GetVolumeId()
		if _, err := n.Ctrl.DeleteVolume(rpcCtx(t), &csi.DeleteVolumeRequest{VolumeId: gone}); err != nil {
			t.Fatalf("DeleteVolume %v after CreateVolume: %v", wait, err)
		}
		noInstantLeft(t, n, gone)
	}
	onlyVolumes(t, n, volumeNamed(t, n, "inst-retry-src"))

	req := instantReq("inst-retry", id, size, blockCap())
	resp, err := n.Ctrl.CreateVolume(rpcCtx(t), req)
	if err != nil {
		t.Fatalf("instant CreateVolume: %v", err)
	}
	volID := resp.GetVolume().GetVolumeId()
	p := stagePublish(t, n.Node, volID, blockCap())
	patch := make([]byte, 3*mib)
	_, _ = rand.Read(patch)
	writeSyncedAt(t, p.Path, patch, 63*mib) // over the start of a data stretch
	copy(want[63*mib:], patch)
	for hydrating(t, n, volID) {
		again, err := n.Ctrl.CreateVolume(rpcCtx(t), req)
		if err != nil || again.GetVolume().GetVolumeId() != volID {
			t.Fatalf("CreateVolume retried during hydration: %v, %v, want volume %s", again.GetVolume(), err, volID)
		}
		time.Sleep(100 * time.Millisecond)
	}
	readsBackup(t, p.Path, want, 0, size)
	unpublishUnstage(t, p)
	noInstantLeft(t, n, volID)
	p = stagePublish(t, n.Node, volID, blockCap())
	readsBackup(t, p.Path, want, 0, size)
	unpublishUnstage(t, p)
}

// volumeNamed returns the id of the volume called name on n's pool.
func volumeNamed(t *testing.T, n *csitest.Node, name string) string {
	t.Helper()
	lv, err := n.Pool.GetByName(rpcCtx(t), backend.KindVolume, name)
	if err != nil {
		t.Fatal(err)
	}
	return lv.ID
}

// TestInstantPoolFull: the pool fills up (another writer takes all its
// space) while an instant restore hydrates: its hydration cannot write the
// data file (ENOSPC); reads of the staged image return the backup's bytes
// or EIO, never others, and the health still says Hydrating; once the
// space is given back the hydration goes on by itself and ends (no driver
// restart, no CreateVolume retry: the CO sent its last one long ago), and
// the volume holds the backup.
func TestInstantPoolFull(t *testing.T) {
	const size = 256 * mib
	s3 := startS3(t)
	proxy := startOutageProxy(t, s3.srv.Endpoint)
	fs := testutil.LoopFS(t, "xfs", 1<<30)
	n := csitest.Start(t, "node-a", filepath.Join(fs, "pool"), func(o *driver.Options) {
		s3.opts(s3.url(proxy.Addr))(o)
		o.PoolReserveBytes = 64 * mib
		o.NoLocalBase = true
	})
	offsets := []int64{0, 64 * mib, 128 * mib, 192 * mib}
	id, want := blockBackupBytes(t, n, "full-src", offsets, 40*mib)
	deleteVolume(t, n, volumeNamed(t, n, "full-src"))
	unix.Sync()

	proxy.getDelay.Store(int64(200 * time.Millisecond))
	volID := createInstant(t, n.Ctrl, "full", id, size, blockCap())
	p := stagePublish(t, n.Node, volID, blockCap())
	filler := filepath.Join(fs, "filler")
	if err := fill(t, filler, statfsAvail(t, fs)-4*mib); err != nil {
		t.Fatal(err)
	}
	proxy.getDelay.Store(0)
	time.Sleep(2 * time.Second) // hydration runs into the full pool
	if readsBackupOrEIO(t, p.Path, want) == 0 {
		t.Fatal("no read failed in a full pool: the test proves nothing")
	}
	awaitHealth(t, n, volID, "Hydrating")

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	unix.Sync()
	start := time.Now()
	for deadline := start.Add(40 * time.Second); hydrationState(t, n, volID) != ""; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("space given back 40 s ago, and the volume still hydrating: %s", hydrationState(t, n, volID))
		}
	}
	t.Logf("hydrated %v after the space came back", time.Since(start).Round(100*time.Millisecond))
	readsBackup(t, p.Path, want, 0, size)
	unpublishUnstage(t, p)
	noInstantLeft(t, n, volID)
}

// hydrationState is the reason (Hydrating, HydrationFailed) and message of
// volume id's hydration in its node health, "" when it has none.
func hydrationState(t *testing.T, n *csitest.Node, id string) string {
	t.Helper()
	h, err := n.Node.NodeGetVolumeHealth(rpcCtx(t), &csi.NodeGetVolumeHealthRequest{VolumeId: id})
	if err != nil {
		t.Fatalf("health of %s: %v", id, err)
	}
	for _, e := range h.GetVolumeHealth().GetHealthStatuses() {
		if r := e.GetReason(); r == "Hydrating" || r == "HydrationFailed" {
			return r + ": " + e.GetMessage()
		}
	}
	return ""
}

// TestInstantRestageAcrossReady: a volume staged, read, written (fsync)
// and unstaged over and over while its hydration ends, so that stages and
// unstages meet the flip to ready at every point: each read returns the
// backup + the writes before it, each stage is on the image while
// hydrating, and on the data file once ready and unstaged; nothing of the
// image is left, and the volume then holds the backup + every write.
func TestInstantRestageAcrossReady(t *testing.T) {
	const size = 256 * mib
	n, proxy := slowDriver(t)
	offsets := []int64{0, 64 * mib, 160 * mib}
	id, want := blockBackupBytes(t, n, "restage-src", offsets, 32*mib)
	proxy.setDelay(150 * time.Millisecond)
	volID := createInstant(t, n.Ctrl, "restage", id, size, blockCap())
	rng := mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), 3))
	onImage, after := 0, 0
	for i := 0; after < 3; i++ {
		wasHydrating := hydrating(t, n, volID)
		p := stagePublish(t, n.Node, volID, blockCap())
		staged := loopBacking(t, p.Path)
		if strings.Contains(staged, "/instant/") {
			onImage++
		} else if wasHydrating {
			t.Logf("stage %d on the data file: hydration ended during it", i)
		}
		off := int64(rng.IntN(int(size/mib)-4)) * mib
		readsBackup(t, p.Path, want, off, 4*mib)
		patch := make([]byte, 64*1024)
		_, _ = rand.Read(patch)
		at := int64(rng.IntN(int(size/4096)-16)) * 4096
		writeSyncedAt(t, p.Path, patch, at)
		copy(want[at:], patch)
		unpublishUnstage(t, p)
		if !hydrating(t, n, volID) {
			after++
			if strings.Contains(staged, "/instant/") && after > 1 {
				t.Fatalf("stage %d of a hydrated, unstaged volume on its image %s", i, staged)
			}
		}
	}
	t.Logf("%d stages on the image before hydration ended", onImage)
	noInstantLeft(t, n, volID)
	p := stagePublish(t, n.Node, volID, blockCap())
	readsBackup(t, p.Path, want, 0, size)
	unpublishUnstage(t, p)
}

// loopBacking is the backing file of the loop device that block device
// path (a published raw block volume) is.
func loopBacking(t *testing.T, path string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	dev := filepath.Base(resolveDevice(t, st.Rdev))
	b, err := os.ReadFile(filepath.Join("/sys/block", dev, "loop", "backing_file"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestInstantOutageWhileStaged: the target goes away for 3 s while a
// hydrating volume is staged: a read of a block not fetched yet waits for
// it and returns the backup's bytes (never zeros, never an error), and
// hydration resumes by itself and ends with the backup's bytes.
func TestInstantOutageWhileStaged(t *testing.T) {
	const size = 256 * mib
	s3 := startS3(t)
	proxy := startOutageProxy(t, s3.srv.Endpoint)
	n := startDriver(t, "node-a", both(s3.opts(s3.url(proxy.Addr)), noLocalBase))
	offsets := []int64{0, 64 * mib, 224 * mib}
	id, want := blockBackupBytes(t, n, "outage-src", offsets, 32*mib)
	proxy.getDelay.Store(int64(150 * time.Millisecond))
	volID := createInstant(t, n.Ctrl, "outage", id, size, blockCap())
	p := stagePublish(t, n.Node, volID, blockCap())
	readsBackup(t, p.Path, want, 0, mib) // the image is open
	back := proxy.outage(3 * time.Second)
	start := time.Now()
	readsBackup(t, p.Path, want, 240*mib, 2*mib) // the last stretch: fetched last
	waited := time.Since(start)
	<-back
	t.Logf("read of an unfetched block in a 3 s outage took %v", waited.Round(10*time.Millisecond))
	if waited < 2*time.Second {
		t.Errorf("read of an unfetched block returned after %v of a 3 s outage: it was fetched already, the test proves nothing", waited)
	}
	proxy.getDelay.Store(0)
	awaitReady(t, n, volID)
	readsBackup(t, p.Path, want, 0, size)
	unpublishUnstage(t, p)
	noInstantLeft(t, n, volID)
}

// TestInstantRetryDuringDelete: CreateVolume retried in a tight loop (a
// provisioner's retries) while DeleteVolume removes the hydrating volume.
// The retries answer the volume or, after the delete, make a new one; but
// a retry must never start the hydration of the volume being deleted
// again (DeleteVolume's StopJob waits for the cancelled job, which a retry
// saw ended with an error and replaced): that job fails ("lvol not
// found"), counts as a failed restore, and could open the data file being
// deleted and hydrate it unlinked, its record left behind.
//
// Known defect, outside the instant code: CreateVolume holds the name's
// lock and DeleteVolume only the id's, so a retry between DeleteVolume's
// StopJob and pool.Delete starts the job again (every iteration here).
// DeleteVolume taking volumeNameLock(lv.Name) too fixes it (tried: 12 of
// 12 pass); the same window restarts a full restore's job.
func TestInstantRetryDuringDelete(t *testing.T) {
	const size = 256 * mib
	n, proxy := slowDriver(t)
	offsets := []int64{0, 64 * mib, 160 * mib}
	id, _ := blockBackup(t, n, "race-src", size, offsets, int(16*mib))
	proxy.setDelay(100 * time.Millisecond)
	recreated := 0
	for i := range 12 {
		req := instantReq("race-"+itoa(i), id, size, blockCap())
		resp, err := n.Ctrl.CreateVolume(rpcCtx(t), req)
		if err != nil {
			t.Fatalf("instant CreateVolume: %v", err)
		}
		stop := retryCreate(t, n, req)
		time.Sleep(time.Duration(i%4) * 10 * time.Millisecond)
		deleteRetrying(t, n, resp.GetVolume().GetVolumeId())
		stop()
		if lv, err := n.Pool.GetByName(rpcCtx(t), backend.KindVolume, req.Name); err == nil {
			recreated++ // a retry after the delete: a new volume, as CSI asks
			deleteRetrying(t, n, lv.ID)
		}
		noInstantLeft(t, n, resp.GetVolume().GetVolumeId())
	}
	t.Logf("%d of 12 deletes followed by a retry that created the volume again", recreated)
	if failed := metricValue(t, n, "chainvol_restores_total", map[string]string{"result": "failure"}); failed != 0 {
		t.Fatalf("%v hydrations failed: a retry restarted the hydration of a volume being deleted", failed)
	}
	if recs, _ := filepath.Glob(filepath.Join(n.Opts.StateDir, "hydration", "*")); len(recs) != 0 {
		t.Fatalf("hydration records left: %v", recs)
	}
}

// retryCreate sends req to n over and over until stop is called.
func retryCreate(t *testing.T, n *csitest.Node, req *csi.CreateVolumeRequest) (stop func()) {
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		for {
			select {
			case <-done:
				return
			default:
			}
			_, err := n.Ctrl.CreateVolume(rpcCtx(t), req)
			if c := grpcstatus.Code(err); err != nil && c != codes.Aborted {
				t.Errorf("CreateVolume retried during DeleteVolume: %v", err)
			}
		}
	}()
	return func() { close(done); <-ended }
}

// deleteRetrying deletes volume id, again while the answer is Aborted
// (another call holds its lock).
func deleteRetrying(t *testing.T, n *csitest.Node, id string) {
	t.Helper()
	for {
		_, err := n.Ctrl.DeleteVolume(rpcCtx(t), &csi.DeleteVolumeRequest{VolumeId: id})
		if grpcstatus.Code(err) != codes.Aborted {
			if err != nil {
				t.Fatalf("DeleteVolume %s: %v", id, err)
			}
			return
		}
	}
}

// TestInstantSnapshotWhileStagedOverImage: once hydrated, a volume still
// staged over its instant image can be snapshotted (no longer
// Unavailable), and the snapshot (a reflink of the data file, the
// filesystem frozen through the image's loop device) holds a file the
// application wrote just before without fsync: a volume from it has every
// file of the backup and that one.
func TestInstantSnapshotWhileStagedOverImage(t *testing.T) {
	f := startInstantFS(t, "snapimg-src")
	f.proxy.setDelay(200 * time.Millisecond)
	volID := f.restore(t, "snapimg", mountCap("ext4"))
	p := stagePublish(t, f.n.Node, volID, mountCap("ext4"))
	f.proxy.setDelay(0)
	awaitReady(t, f.n, volID)
	if !strings.Contains(stagedBacking(t, p), "/instant/") {
		t.Fatalf("staged on %s, want the instant image (the test proves nothing)", stagedBacking(t, p))
	}
	buf := make([]byte, 3*mib)
	_, _ = rand.Read(buf)
	if err := os.WriteFile(filepath.Join(p.Path, "unsynced"), buf, 0o600); err != nil {
		t.Fatal(err)
	}
	f.want["unsynced"] = hashTree(t, p.Path)["unsynced"]
	snap, err := f.n.Ctrl.CreateSnapshot(rpcCtx(t), &csi.CreateSnapshotRequest{Name: "snapimg-s", SourceVolumeId: volID})
	if err != nil {
		t.Fatalf("snapshot of a hydrated volume staged over its image: %v", err)
	}
	resp, err := f.n.Ctrl.CreateVolume(rpcCtx(t), &csi.CreateVolumeRequest{Name: "snapimg-copy",
		CapacityRange: &csi.CapacityRange{RequiredBytes: volSize}, VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4")},
		VolumeContentSource: snapshotSource(snap.GetSnapshot().GetSnapshotId())})
	if err != nil {
		t.Fatalf("volume from the snapshot: %v", err)
	}
	c := stagePublish(t, f.n.Node, resp.GetVolume().GetVolumeId(), mountCap("ext4"))
	sameTree(t, "volume from a snapshot taken over the image", c.Path, f.want)
	unpublishUnstage(t, c)
	unpublishUnstage(t, p)
	noInstantLeft(t, f.n, volID)
}

// TestInstantStageAfterInterruptedStage: the driver is killed with a
// hydrating block volume staged but not published (as a stage the kill
// interrupted, which the kubelet retries and never unstages): the next
// driver's NodeStageVolume at the same path detaches the dead loop device
// and stages the volume again, and it reads the backup's bytes.
func TestInstantStageAfterInterruptedStage(t *testing.T) {
	const size = 256 * mib
	second, volID, p := killedWhileStaged(t, "inst-intr", size, true)
	if _, err := second.Node.NodeStageVolume(rpcCtx(t), &csi.NodeStageVolumeRequest{
		VolumeId: volID, StagingTargetPath: p.staging, VolumeCapability: blockCap()}); err != nil {
		t.Fatalf("NodeStageVolume retried after the driver was killed: %v", err)
	}
	if _, err := second.Node.NodePublishVolume(rpcCtx(t), &csi.NodePublishVolumeRequest{
		VolumeId: volID, StagingTargetPath: p.staging, TargetPath: p.Path, VolumeCapability: blockCap()}); err != nil {
		t.Fatalf("NodePublishVolume: %v", err)
	}
	readsBackup(t, p.Path, expectedImage(t, size), 0, size)
	awaitReady(t, second, volID)
	unpublishUnstage(t, p)
	noInstantLeft(t, second, volID)
}

// TestInstantXFSBesideItsSource: an XFS backup restored instantly while
// its source is still mounted on the node (the same filesystem UUID):
// the copy stages over its image (log replayed through it), its files
// read with the source's sha256, a write to it is fsynced, and once
// hydrated and staged again on its data file it has both.
func TestInstantXFSBesideItsSource(t *testing.T) {
	n, proxy := slowDriver(t)
	src := createVolume(t, n.Ctrl, "xfs-src", volSize, mountCap("xfs"), nil)
	sp := stagePublish(t, n.Node, src.GetVolumeId(), mountCap("xfs"))
	writeTree(t, sp.Path, 11, 24*mib)
	want := hashTree(t, sp.Path)
	id := backup(t, n.Ctrl, src.GetVolumeId(), "xfs-b1", "")
	proxy.setDelay(300 * time.Millisecond)
	volID := createInstant(t, n.Ctrl, "xfs-copy", id, volSize, mountCap("xfs"))
	p := stagePublish(t, n.Node, volID, mountCap("xfs"))
	sameTree(t, "XFS instant restore beside its source", p.Path, want)
	want["new"] = writeSynced(t, filepath.Join(p.Path, "new"), int(mib))
	proxy.setDelay(0)
	awaitReady(t, n, volID)
	unpublishUnstage(t, p)
	noInstantLeft(t, n, volID)
	p = stagePublish(t, n.Node, volID, mountCap("xfs"))
	sameTree(t, "XFS instant restore on its data file", p.Path, want)
	unpublishUnstage(t, p)
	unpublishUnstage(t, sp)
}
