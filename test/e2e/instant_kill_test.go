package e2e

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/internal/testutil"
)

// killSize is the size of the volume TestInstantKilledDriverSchedules
// restores: 4 stretches of 32 MiB of data (startRestartRig).
const killSize = 256 * mib

// TestInstantKilledDriverSchedules: in each schedule a driver (a child
// process) answers an instant restore, the volume is staged (or not) and
// an application writes, fsyncs and reads it at random, and the driver is
// killed (SIGKILL) at a random point in its first 2.5 s of hydration. Every
// read before the kill returned the backup's bytes and the application's
// fsynced writes; a new driver undoes the dead stage, resumes hydration to
// its end, and the volume then holds exactly the backup + the fsynced
// writes (plus, or not, the one write the kill interrupted); nothing of the
// image is left.
//
//	CHAINVOL_SCHEDULES=N  schedules (default 3, about 6 s each)
//	CHAINVOL_SEED=S       the first schedule's seed; schedule i uses S+i
func TestInstantKilledDriverSchedules(t *testing.T) {
	testutil.RequireRoot(t)
	n, seed := testutil.Schedules(t, 3)
	r := startRestartRig(t, "inst-sched-src", killSize)
	id := backup(t, r.first.Ctrl, r.vol.GetVolumeId(), "inst-sched-b1", "")
	r.first.kill() // each schedule starts its own
	base := expectedImage(t, killSize)
	for i := range n {
		s := seed + uint64(i)
		if !t.Run(fmt.Sprintf("seed=%d", s), func(t *testing.T) { runInstantKill(t, r, id, base, s, i) }) {
			t.Logf("rerun alone with CHAINVOL_SEED=%d CHAINVOL_SCHEDULES=1", s)
			break
		}
	}
}

// runInstantKill runs the schedule of seed (see TestInstantKilledDriverSchedules).
func runInstantKill(t *testing.T, r restartRig, id string, base []byte, seed uint64, i int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	first := startChild(t, r.opts)
	r.proxy.setDelay(time.Duration(30+rng.IntN(120)) * time.Millisecond)
	resp, err := first.Ctrl.CreateVolume(rpcCtx(t), instantReq(fmt.Sprintf("inst-sched-%d", i), id, killSize, blockCap()))
	if err != nil {
		t.Fatalf("instant CreateVolume: %v", err)
	}
	volID := resp.GetVolume().GetVolumeId()
	killAt := time.Duration(rng.IntN(2500)) * time.Millisecond
	app := &killApp{want: bytes.Clone(base), rng: rand.New(rand.NewPCG(seed, 2)),
		done: make(chan struct{}), stop: make(chan struct{})}
	var p *published
	staged := rng.IntN(4) > 0
	if staged {
		p = stagePublish(t, first.Node, volID, blockCap())
		go app.run(t, p.Path)
	}
	t.Logf("block GETs held %v, staged %v, kill after %v", time.Duration(r.proxy.delay.Load()), staged, killAt)
	time.Sleep(killAt)
	killed := time.Now()
	first.kill()
	if staged {
		// A volume hydrated before its stage is on its data file, which
		// the kill does not touch: its I/O goes on, so it is told to stop.
		time.AfterFunc(2*time.Second, func() { close(app.stop) })
		<-app.done
		t.Logf("before the kill: %d fsynced writes, %d exact reads; after it: %v", app.writes, app.reads, app.err)
		if app.err != nil && app.failed.Before(killed) {
			t.Fatalf("I/O failed before the kill: %v", app.err)
		}
	}

	r.proxy.setDelay(0)
	second := startChild(t, r.opts)
	n := &csitest.Node{Opts: r.opts, Ctrl: second.Ctrl, Node: second.Node}
	if staged {
		p.node = second.Node
		unpublishUnstage(t, p)
	}
	awaitReady(t, n, volID)
	rp := stagePublish(t, second.Node, volID, blockCap())
	app.holds(t, rp.Path)
	unpublishUnstage(t, rp)
	noInstantLeft(t, n, volID)
	if _, err := second.Ctrl.DeleteVolume(rpcCtx(t), &csi.DeleteVolumeRequest{VolumeId: volID}); err != nil {
		t.Fatalf("DeleteVolume: %v", err)
	}
	if _, err := second.terminate(t, 20*time.Second); err != nil {
		t.Fatalf("driver exit: %v", err)
	}
}

// killApp is the application of a schedule: random fsynced writes and
// exact reads of the device until its first error (the kill).
type killApp struct {
	rng         *rand.Rand
	want        []byte // the backup + every write whose fsync returned
	uncertain   []byte // the write the kill interrupted, at uncertainAt
	uncertainAt int64
	writes      int
	reads       int
	err         error
	failed      time.Time
	done        chan struct{} // made before run starts; closed when it ends
	stop        chan struct{} // closed by the test: run ends without an error
}

// run does the I/O on dev until an error, then closes done.
func (a *killApp) run(t *testing.T, dev string) {
	defer close(a.done)
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	if err != nil {
		a.err, a.failed = err, time.Now()
		return
	}
	defer f.Close()
	for a.err == nil {
		select {
		case <-a.stop:
			return
		default:
		}
		off := int64(a.rng.IntN(int(killSize/4096))) * 4096
		n := min(int64(1+a.rng.IntN(256))*4096, killSize-off)
		if a.rng.IntN(2) == 0 {
			a.err = a.write(f, off, n)
		} else {
			a.err = a.read(t, f, off, n)
		}
	}
	a.failed = time.Now()
}

// write writes n random bytes at off and fsyncs them; they are wanted
// once the fsync returned, maybe there if either failed.
func (a *killApp) write(f *os.File, off, n int64) error {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(a.rng.Uint32())
	}
	_, err := f.WriteAt(p, off)
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		a.uncertain, a.uncertainAt = p, off
		return fmt.Errorf("write at %d: %w", off, err)
	}
	copy(a.want[off:], p)
	a.writes++
	return nil
}

// read reads n bytes at off; a read that returns other bytes than wanted
// fails the test.
func (a *killApp) read(t *testing.T, f *os.File, off, n int64) error {
	got := make([]byte, n)
	if _, err := f.ReadAt(got, off); err != nil {
		return fmt.Errorf("read at %d: %w", off, err)
	}
	if !bytes.Equal(got, a.want[off:off+n]) {
		t.Errorf("read at %d (%d bytes) returned bytes that are neither the backup's nor written", off, n)
	}
	a.reads++
	return nil
}

// holds checks that device dev holds what the application wanted, byte by
// byte the interrupted write's or the older ones in its range.
func (a *killApp) holds(t *testing.T, dev string) {
	t.Helper()
	f, err := os.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := make([]byte, 4*mib)
	for off := int64(0); off < killSize; off += int64(len(got)) {
		if _, err := f.ReadAt(got, off); err != nil {
			t.Fatalf("read %s at %d: %v", dev, off, err)
		}
		if bytes.Equal(got, a.want[off:off+int64(len(got))]) {
			continue
		}
		for i := range got {
			at := off + int64(i)
			if got[i] == a.want[at] {
				continue
			}
			if j := at - a.uncertainAt; j >= 0 && j < int64(len(a.uncertain)) && got[i] == a.uncertain[j] {
				continue
			}
			t.Fatalf("volume after the restart differs at byte %d from the backup + the fsynced writes", at)
		}
	}
}

// TestInstantKilledDriverExt4: the driver is killed while an ext4 instant
// restore is mounted over its image and the application creates files,
// fsyncing each and then writing one it does not fsync, for 3 s; after a
// restart the dead stage is unstaged, hydration
// ends, and the volume staged on its data file mounts (journal replayed),
// has every file of the backup and every fsynced one with its sha256, and
// e2fsck finds nothing to fix: the loop device's flushes reached the data
// file in order through the image.
func TestInstantKilledDriverExt4(t *testing.T) {
	r := startRestartRig(t, "inst-kfs-blk", 64*mib)
	src := createVolume(t, r.first.Ctrl, "inst-kfs-src", volSize, mountCap("ext4"), nil)
	sp := stagePublish(t, r.first.Node, src.GetVolumeId(), mountCap("ext4"))
	writeTree(t, sp.Path, 13, 128*mib) // blocks enough to hydrate for seconds
	want := hashTree(t, sp.Path)
	unpublishUnstage(t, sp)
	id := backup(t, r.first.Ctrl, src.GetVolumeId(), "inst-kfs-b1", "")
	r.proxy.setDelay(time.Second)
	volID := createInstant(t, r.first.Ctrl, "inst-kfs", id, volSize, mountCap("ext4"))
	p := stagePublish(t, r.first.Node, volID, mountCap("ext4"))
	synced := make(chan tree, 1)
	go func() { synced <- writeUntilError(p.Path) }()
	time.Sleep(3 * time.Second)
	if h := hydrationState(t, &csitest.Node{Ctrl: r.first.Ctrl, Node: r.first.Node}, volID); !strings.HasPrefix(h, "Hydrating") {
		t.Fatalf("hydrated before the kill (%q): the test proves nothing", h)
	}
	r.first.kill()
	done := <-synced
	t.Logf("%d files fsynced before the kill", len(done))
	for name, h := range done {
		want[name] = h
	}
	r.proxy.setDelay(0)
	second := r.restart(t)
	p.node = second.Node
	unpublishUnstage(t, p)
	awaitReady(t, second, volID)
	rp := stagePublish(t, second.Node, volID, mountCap("ext4"))
	got := hashTree(t, rp.Path)
	for name, h := range want {
		if got[name] != h {
			t.Errorf("after the kill and restart, %s has sha256 %s, want %s", name, got[name], h)
		}
	}
	unpublishUnstage(t, rp)
	data, err := second.Pool.DataPath(volID)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("e2fsck", "-fn", data).CombinedOutput(); err != nil {
		t.Fatalf("e2fsck of the volume after the kill: %v\n%s", err, out)
	}
	noInstantLeft(t, second, volID)
}

// writeUntilError creates files of 256 KiB in dir, each fsynced, and an
// unsynced one after each, until an error (the kill); it returns the
// sha256 of each file whose fsync returned (as hashTree names them).
func writeUntilError(dir string) tree {
	done := tree{}
	for i := 0; ; i++ {
		name := "synced-" + itoa(i)
		buf := make([]byte, 256*1024)
		_, _ = newRand(uint64(i)).Read(buf)
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return done
		}
		_, err = f.Write(buf)
		if err == nil {
			err = f.Sync()
		}
		f.Close()
		if err != nil {
			return done
		}
		done[name] = fmt.Sprintf("%x", sha256.Sum256(buf))
		_ = os.WriteFile(filepath.Join(dir, "unsynced-"+itoa(i)), buf[:4096], 0o600)
	}
}
