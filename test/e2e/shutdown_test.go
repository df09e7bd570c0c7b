package e2e

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/chainvol/chainvol/pkg/driver"
)

// stopEnv is one node's pool and state directory whose driver runs as a
// child process, restarted after each SIGTERM, with its target "offsite"
// on versitygw behind a faultProxy (whose latency makes jobs last).
type stopEnv struct {
	t     *testing.T
	s3    s3Target
	proxy *faultProxy
	opts  driver.Options
	rng   *rand.Rand
}

// stopBound is the drivers' -shutdown-timeout in TestStopMidJobs.
const stopBound = 10 * time.Second

func newStopEnv(t *testing.T) *stopEnv {
	e := &stopEnv{t: t, s3: startS3(t)}
	e.proxy = startFaultProxy(t, e.s3.srv.Endpoint)
	dir := t.TempDir()
	e.opts = driver.Options{Endpoint: "unix://" + filepath.Join(dir, "csi.sock"), NodeID: "node-a", PoolDir: newPool(t),
		StateDir: filepath.Join(dir, "state"), DriverName: driver.DefaultDriverName,
		GCDelay: 100 * time.Millisecond, ShutdownTimeout: stopBound,
		NoLocalBase: true} // the restore reads every block from the (slow) target
	e.s3.opts(e.s3.url(e.proxy.Addr))(&e.opts)
	seed := uint64(time.Now().UnixNano())
	t.Logf("random stop points: seed %d", seed)
	e.rng = rand.New(rand.NewPCG(seed, seed))
	return e
}

// setLatency delays every request to the target by d.
func (e *stopEnv) setLatency(d time.Duration) { e.proxy.latency.Store(int64(d)) }

// locks lists the chain lock objects of kind ("writer", "gc") in the
// bucket, read from versitygw's directory, not through the driver.
func (e *stopEnv) locks(kind string) []string {
	m, _ := filepath.Glob(filepath.Join(e.s3.srv.Dir, e.s3.srv.Bucket, "e2e", "pending", "*", kind+"-*.json"))
	return m
}

// waitLock waits (up to 20 s) until a lock of kind exists: the job holds
// its lease.
func (e *stopEnv) waitLock(kind string) {
	e.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); len(e.locks(kind)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			e.t.Fatalf("no %s lock in the bucket within 20s", kind)
		}
	}
}

// waitCheckpoint waits (up to 20 s) until a restore's checkpoint exists
// (the first block is written) and returns its path.
func (e *stopEnv) waitCheckpoint() string {
	e.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(e.opts.StateDir, "restores", "*.checkpoint")); len(m) > 0 {
			return m[0]
		}
		if time.Now().After(deadline) {
			e.t.Fatal("no restore checkpoint within 20s")
		}
	}
}

// fetchedBytes is the fetchedBytes of the "restore done" line of log.
func fetchedBytes(t *testing.T, log string) int64 {
	t.Helper()
	m := regexp.MustCompile(`"restore done".* fetchedBytes=(\d+)`).FindStringSubmatch(log)
	if m == nil {
		t.Fatal("no \"restore done\" line with fetchedBytes in the driver's log")
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// sigterm waits a random time below upTo, sends SIGTERM to c and checks
// the stop: exit status 0 within the bound, the shutdown's line for the
// job named job with state "stopped", its last line, and no writer or gc
// lock left in the bucket. It returns how long the exit took.
func (e *stopEnv) sigterm(c *childDriver, upTo time.Duration, job string) time.Duration {
	e.t.Helper()
	time.Sleep(time.Duration(e.rng.Int64N(int64(upTo))))
	took, err := c.terminate(e.t, stopBound+10*time.Second)
	e.t.Logf("SIGTERM during %s: exited in %v (%v)", job, took, err)
	if err != nil {
		e.t.Errorf("driver stopped by SIGTERM during %s: %v, want exit status 0", job, err)
	}
	if took > stopBound {
		e.t.Errorf("driver took %v to stop during %s, more than its bound %v", took, job, stopBound)
	}
	log := c.log.String()
	if !hasLine(log, `"shutdown: job" job="`+job, `state="stopped"`) {
		e.t.Errorf("no line \"shutdown: job\" job=%q... state=\"stopped\" in the driver's log", job)
	}
	if !strings.Contains(log, `"shut down"`) {
		e.t.Errorf("no \"shut down\" line in the driver's log")
	}
	if l := append(e.locks("writer"), e.locks("gc")...); len(l) > 0 {
		e.t.Errorf("chain locks left in the bucket after SIGTERM during %s: %v", job, l)
	}
	return took
}

// hasLine reports whether a line of log contains every one of words.
func hasLine(log string, words ...string) bool {
	for _, l := range strings.Split(log, "\n") {
		all := true
		for _, w := range words {
			all = all && strings.Contains(l, w)
		}
		if all {
			return true
		}
	}
	return false
}

// inFlight runs call in the background with a deadline of 20 s, as a
// sidecar's call that the SIGTERM finds waiting, and returns its result.
func inFlight(call func(context.Context) error) <-chan error {
	out := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out <- call(ctx)
	}()
	return out
}

// TestStopMidJobs (issue 25, item 3): SIGTERM at a random point of a
// backup upload (a CreateSnapshot waiting for it), of a restore (a
// CreateVolume waiting for it) and of a background gc stops the driver
// with exit status 0 within -shutdown-timeout, logs what it stopped, and
// leaves no writer or gc lock in the bucket (before, the process exited
// while the jobs ran, and their locks blocked the chain's gc for a lease
// TTL). A new driver on the same pool finishes the upload under the same
// backup and the restore with the backup's exact bytes.
func TestStopMidJobs(t *testing.T) {
	const size = 256 * mib
	e := newStopEnv(t)
	a := startChild(t, e.opts)
	vol := createVolume(t, a.Ctrl, "stop-src", size, blockCap(), nil)
	want := writeBlocks(t, a, vol.GetVolumeId(), 1, []int64{0, 64 * mib, 128 * mib, 192 * mib})
	b1 := backup(t, a.Ctrl, vol.GetVolumeId(), "stop-b1", "")
	writeBlocks(t, a, vol.GetVolumeId(), 2, []int64{0, 128 * mib})

	e.setLatency(300 * time.Millisecond)
	req := &csi.CreateSnapshotRequest{Name: "stop-b2", SourceVolumeId: vol.GetVolumeId(), Parameters: backupParams("")}
	call := inFlight(func(ctx context.Context) error { _, err := a.Ctrl.CreateSnapshot(ctx, req); return err })
	e.waitLock("writer")
	took := []time.Duration{e.sigterm(a, time.Second, "backup upload")}
	t.Logf("the waiting CreateSnapshot answered %v", <-call)

	e.setLatency(0)
	b := startChild(t, e.opts)
	backupReq(t, b.Ctrl, req)

	e.setLatency(400 * time.Millisecond)
	rreq := restoreReq("stop-copy", b1, size, blockCap())
	call = inFlight(func(ctx context.Context) error { _, err := b.Ctrl.CreateVolume(ctx, rreq); return err })
	ckpt := e.waitCheckpoint()
	took = append(took, e.sigterm(b, 800*time.Millisecond, "restore of"))
	t.Logf("the waiting CreateVolume answered %v", <-call)
	if _, err := os.Stat(ckpt); err != nil {
		t.Errorf("the stopped restore's checkpoint: %v", err)
	}

	e.setLatency(20 * time.Millisecond)
	c := startChild(t, e.opts)
	copyID := restore(t, c.Ctrl, rreq).GetVolumeId()
	if got := hashVolume(t, c, copyID); got != want {
		t.Fatalf("volume restored across a SIGTERM: sha256 %x, want %x (the backup's)", got, want)
	}
	// 4 stretches of 32 MiB: a restore begun afresh fetches all of them.
	if f := fetchedBytes(t, c.log.String()); f >= 128*mib {
		t.Errorf("the restore after the restart fetched %d bytes: all of the backup, not resumed from its checkpoint", f)
	}

	e.setLatency(300 * time.Millisecond)
	if _, err := c.Ctrl.DeleteSnapshot(rpcCtx(t), &csi.DeleteSnapshotRequest{SnapshotId: b1}); err != nil {
		t.Fatal(err)
	}
	e.waitLock("gc")
	took = append(took, e.sigterm(c, 500*time.Millisecond, "background gc"))
	t.Logf("exit times after SIGTERM (upload, restore, gc): %v", took)
}

// writeBlocks publishes block volume id on c's node, writes 32 MiB of
// random bytes (seeded) at each offset, unpublishes it and returns the
// volume's sha256.
func writeBlocks(t *testing.T, c *childDriver, id string, seed uint64, offsets []int64) [32]byte {
	t.Helper()
	p := stagePublish(t, c.Node, id, blockCap())
	writeDevice(t, p.Path, seed, offsets, int(32*mib))
	sum := hashDevice(t, p.Path)
	unpublishUnstage(t, p)
	return sum
}

// hashVolume is the sha256 of block volume id, published on c's node.
func hashVolume(t *testing.T, c *childDriver, id string) [32]byte {
	t.Helper()
	p := stagePublish(t, c.Node, id, blockCap())
	defer unpublishUnstage(t, p)
	return hashDevice(t, p.Path)
}
