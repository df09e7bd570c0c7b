package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/driver"
)

// The volume lifecycle's interleaving test (developers' guide: what changes
// shared state gets many random interleavings with injected delays,
// errors and kills, and its invariants checked after each). Each schedule
// runs workers that call the driver concurrently (CreateVolume empty, from
// a backup snapshot, through fromBackup with an id or "latest", as a
// clone; DeleteVolume; CreateSnapshot local and backup; DeleteSnapshot;
// ListSnapshots; NodeStage/Publish to write and read the data; retries of
// the same request) while a chaos goroutine injects store faults (503s,
// delays, stalled block GETs) through chaosProxy and SIGKILLs the driver,
// at random or just as a restore or an upload moves a block, and starts it
// again on the same pool and state directory. Every call whose answer is
// "try again" (Unavailable, Aborted, a deadline) is retried with the same
// request, as the sidecars do. Then the invariants (lcSchedule.verify,
// lifecycle_verify_test.go); the operations are in lifecycle_ops_test.go,
// the proxy and the killable driver in lifecycle_chaos_test.go. Bugs it
// found have focused tests in lifecycle_regress_test.go.
//
//	CHAINVOL_SCHEDULES=N  schedules to run (default 3: 7-20 s each, about 35 s in all on 2 busy cores)
//	CHAINVOL_SEED=S       the first schedule's seed (default: from the clock); schedule i uses S+i
//	CHAINVOL_KEEP_LOG=1   keep every driver's log (/tmp/chainvol-lifecycle-SEED.log), not only failed ones
//
// The seed fixes each worker's plan (which operations, which objects, which
// faults), not the goroutines' interleaving, which the run adds.

const (
	lcVolSize     = 64 * mib
	lcWorkers     = 4
	lcOpsPerWork  = 10
	lcMaxKills    = 4
	lcCallTimeout = 4 * time.Second  // one call, like a sidecar's --timeout
	lcSettleFor   = 90 * time.Second // the retries of one call
)

// tolerateSweptRetry: a CreateSnapshot of a backup retried after it
// answered ready may answer NotFound or a new backup once the sweep has
// deleted its local snapshot. That is a bug (CSI "CreateSnapshot" is
// idempotent while the snapshot exists), left to its focused tests
// TestBackupRetryAfterSweepSameID and TestBackupRetryAfterVolumeDeletedSameID
// so that this test keeps finding others; set it to false once fixed.
const tolerateSweptRetry = false

// tolerateTempRecords: a kill between the temporary file and the rename of
// Image.WriteFile leaves a temporary file (durable.IsTemp; ".image-*"
// before internal/durable) in the state directory that
// nothing removes (a small leak per crash, TestImageTempFilesCollected);
// the check logs and removes it. Set it to false once fixed.
const tolerateTempRecords = true

func TestLifecycleInterleavings(t *testing.T) {
	testutil.RequireRoot(t)
	n, seed := testutil.Schedules(t, 3)
	env := newLCEnv(t)
	total := 0
	for i := range n {
		s := seed + uint64(i)
		ok := t.Run(fmt.Sprintf("seed=%d", s), func(t *testing.T) { runLCSchedule(t, env, s, i) })
		total++
		if !ok {
			t.Logf("schedule with seed %d failed; rerun it alone with CHAINVOL_SEED=%d CHAINVOL_SCHEDULES=1", s, s)
			break // the pool may hold its leftovers: later schedules would only repeat it
		}
	}
	t.Logf("%d schedules run, first seed %d", total, seed)
}

// lcEnv is what the schedules share: versitygw behind a chaosProxy, and a
// driver's pool and state directory that every schedule leaves empty.
type lcEnv struct {
	proxy             *chaosProxy
	opts              driver.Options
	poolDir, stateDir string
}

func newLCEnv(t *testing.T) *lcEnv {
	s3 := startS3(t)
	p := startChaosProxy(t, s3.srv.Endpoint)
	dir := t.TempDir()
	e := &lcEnv{proxy: p, poolDir: newPool(t), stateDir: filepath.Join(dir, "state")}
	e.opts = driver.Options{Endpoint: "unix://" + filepath.Join(dir, "csi.sock"), NodeID: "node-a",
		PoolDir: e.poolDir, StateDir: e.stateDir, DriverName: driver.DefaultDriverName}
	s3.opts(s3.url(p.Addr))(&e.opts)
	return e
}

// lcVol is a volume a call returned OK for. content is held for writing
// while data is written and for reading while the content must not change
// (a snapshot or clone of it is being taken, its data is checked).
type lcVol struct {
	name    string
	req     *csi.CreateVolumeRequest
	id      string
	how     string
	content sync.RWMutex
	hash    [32]byte // guarded by content
	gone    bool     // DeleteVolume called; guarded by lcSchedule.mu
	// orphan: made by a retry of the request of a volume deleted
	// meanwhile (the name was free again), content unknown.
	orphan bool
}

// lcSnap is a snapshot a CreateSnapshot call returned OK for.
type lcSnap struct {
	name   string
	req    *csi.CreateSnapshotRequest
	id     string
	src    *lcVol
	hash   [32]byte // the source's content when it was taken
	backup bool
	ready  bool // reported ready_to_use; guarded by lcSchedule.mu
	gone   bool // DeleteSnapshot called; guarded by lcSchedule.mu
	// orphan: made by a retry of the request of a snapshot deleted
	// meanwhile (the name was free again), content unknown.
	orphan bool
}

// lcSchedule is one schedule: its driver, its model of what exists, and
// its failures.
type lcSchedule struct {
	t      *testing.T
	env    *lcEnv
	drv    *chaosDriver
	seed   uint64
	prefix string
	dir    string // staging and target paths

	mu    sync.Mutex
	vols  []*lcVol
	snaps []*lcSnap
	byRef map[string]*lcSnap // backup "TARGET:CHAIN@ID" → its snapshot

	names, calls, kills atomic.Int64
	killsMid            [2]atomic.Int64 // kills with a block GET, PUT held
	sweptRetries        atomic.Int64    // tolerateSweptRetry cases
	failed              atomic.Bool
	keepLog             atomic.Bool // something to look at in the driver's log
}

func runLCSchedule(t *testing.T, env *lcEnv, seed uint64, idx int) {
	start := time.Now()
	rng := rand.New(rand.NewPCG(seed, 0x11fe))
	opts := env.opts
	opts.NoLocalBase = rng.IntN(3) == 0 // restores from the target only, sometimes
	logPath := filepath.Join(os.TempDir(), fmt.Sprintf("chainvol-lifecycle-%d.log", seed))
	s := &lcSchedule{t: t, env: env, seed: seed, prefix: fmt.Sprintf("i%d-", idx), dir: t.TempDir(),
		byRef: map[string]*lcSnap{}}
	s.drv = newChaosDriver(t, opts, logPath)
	t.Cleanup(func() {
		if b, _ := os.ReadFile(logPath); driverRaces(string(b)) > 0 {
			t.Errorf("seed %d: the race detector reported a data race in the driver (go test -race)", seed)
			s.keepLog.Store(true)
		}
		if s.keepLog.Load() || os.Getenv("CHAINVOL_KEEP_LOG") != "" {
			t.Logf("driver log kept at %s", logPath)
		}
		if t.Failed() {
			t.Logf("seed %d failed: rerun with CHAINVOL_SEED=%d CHAINVOL_SCHEDULES=1; driver log kept at %s", seed, seed, logPath)
		} else if !s.keepLog.Load() && os.Getenv("CHAINVOL_KEEP_LOG") == "" {
			_ = os.Remove(logPath)
		}
	})
	if err := s.drv.start(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var chaos sync.WaitGroup
	chaos.Add(1)
	go func() { defer chaos.Done(); s.chaos(rand.New(rand.NewPCG(seed, 0xc4a05)), stop) }()
	var wg sync.WaitGroup
	for w := range lcWorkers {
		wg.Add(1)
		go func() { defer wg.Done(); s.work(rand.New(rand.NewPCG(seed, uint64(w)))) }()
	}
	wg.Wait()
	close(stop)
	chaos.Wait()
	env.proxy.calm()
	if !s.failed.Load() {
		s.verify()
	}
	t.Logf("seed %d: %d calls, %d kills (%d mid-restore, %d mid-upload), %d volumes and %d snapshots made, %d swept retries, localBase=%v, %v",
		seed, s.calls.Load(), s.kills.Load(), s.killsMid[0].Load(), s.killsMid[1].Load(), len(s.vols), len(s.snaps),
		s.sweptRetries.Load(), !opts.NoLocalBase, time.Since(start).Round(time.Second))
}

// driverRaces counts the race detector's reports in a driver's log, less
// those of k8s.io/mount-utils' Mounter.hasSystemd (v0.37.2), which sets
// its systemd flag lazily without a lock: the first concurrent mounts of
// a fresh driver race on it (reported, see the interleaving notes).
func driverRaces(log string) int {
	n := 0
	for _, r := range strings.Split(log, "WARNING: DATA RACE")[1:] {
		if !strings.Contains(r, "(*Mounter).hasSystemd") {
			n++
		}
	}
	return n
}

// fail records a broken invariant; workers stop at their next operation.
func (s *lcSchedule) fail(format string, args ...any) {
	s.failed.Store(true)
	s.t.Errorf("seed %d: "+format, append([]any{s.seed}, args...)...)
}

func (s *lcSchedule) name(kind string) string {
	return fmt.Sprintf("%s%s%d", s.prefix, kind, s.names.Add(1))
}

// retryable reports whether an answer means "not final, call again".
func retryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.Aborted, codes.DeadlineExceeded, codes.Canceled:
		return true
	}
	return false
}

// settle calls fn with a fresh deadline until its answer is final (not
// retryable, or also not one of extra), as a sidecar does, for up to
// lcSettleFor.
func (s *lcSchedule) settle(what string, fn func(context.Context) error, extra ...codes.Code) error {
	deadline := time.Now().Add(lcSettleFor)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), lcCallTimeout)
		err := fn(ctx)
		cancel()
		s.calls.Add(1)
		again := retryable(err)
		for _, c := range extra {
			again = again || (err != nil && status.Code(err) == c)
		}
		if !again {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: no final answer within %v, last: %w", what, lcSettleFor, err)
		}
		time.Sleep(time.Duration(50+rand.IntN(200)) * time.Millisecond)
	}
}

// chaos injects faults until stop: store errors and delays, stalled block
// GETs, and kills of the driver, at random or mid-restore or mid-upload.
func (s *lcSchedule) chaos(rng *rand.Rand, stop <-chan struct{}) {
	p := s.env.proxy
	for {
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(100+rng.IntN(1000)) * time.Millisecond):
		}
		k := rng.IntN(6)
		if s.kills.Load() == 0 {
			k = 5 // every schedule has a kill
		}
		switch {
		case k == 0:
			p.errPermille.Store(int64(rng.IntN(150)))
			p.maxDelay.Store(int64(time.Duration(rng.IntN(80)) * time.Millisecond))
		case k == 1:
			p.stalls.Store(int64(1 + rng.IntN(3)))
			time.Sleep(time.Duration(500+rng.IntN(2500)) * time.Millisecond)
			p.unstall()
		case s.kills.Load() < lcMaxKills:
			// A kill at a random time, or with a restore (a block GET) or
			// an upload (a block PUT) held in the middle.
			method := [...]string{"", "GET", "PUT", "GET", "PUT"}[rng.IntN(5)]
			switch method {
			case "GET":
				p.stalls.Store(2)
			case "PUT":
				p.putStalls.Store(2)
			}
			held := method != "" && p.waitBlock(method, 3*time.Second)
			if method != "" && !held && s.kills.Load() > 0 {
				p.unstall()
				continue // no restore or upload came: no kill this time
			}
			s.kills.Add(1)
			if held {
				s.killsMid[map[string]int{"GET": 0, "PUT": 1}[method]].Add(1)
			}
			s.drv.kill()
			p.unstall()
			if err := s.drv.restart(time.Duration(rng.IntN(300)) * time.Millisecond); err != nil {
				s.fail("restart the driver: %v", err)
				return
			}
		}
	}
}

// work runs one worker's plan of lcOpsPerWork operations.
func (s *lcSchedule) work(rng *rand.Rand) {
	ops := []struct {
		weight int
		run    func(*rand.Rand) bool // false: no object to work on
	}{
		{3, s.opCreate}, {1, s.opWrite}, {2, s.opSnapshot(false)}, {3, s.opSnapshot(true)},
		{3, s.opRestore}, {1, s.opClone}, {2, s.opDeleteVolume}, {2, s.opDeleteSnapshot},
		{1, s.opList}, {1, s.opRetry}, {1, s.opCheck},
	}
	sum := 0
	for _, o := range ops {
		sum += o.weight
	}
	for range lcOpsPerWork {
		if s.failed.Load() {
			return
		}
		n := rng.IntN(sum)
		for _, o := range ops {
			if n -= o.weight; n < 0 {
				if !o.run(rng) {
					s.opCreate(rng)
				}
				break
			}
		}
	}
}
