package driver

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/jobrec"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

// Defaults of the background gc that follows backup deletions.
const (
	// DefaultGCDelay is how long after the last backup deletion of a chain
	// its gc starts: deletions of one retention round (a CronJob pruning
	// keep-last-N, Velero expiring a schedule) coalesce into one gc.
	DefaultGCDelay = time.Minute
	// DefaultGCMinAge is the grace of the background gc: unreferenced
	// blocks younger than this stay (s3chain.GCOptions.MinAge; running
	// backups are protected by their chain locks whatever it is).
	DefaultGCMinAge = s3chain.DefaultGCMinAge
)

// gcKey names one chain of one target.
type gcKey struct{ target, chain string }

// maxGCRetries bounds the re-runs of a chain's gc that found a backup in
// progress (each one -gc-delay later).
const maxGCRetries = 5

// gcScheduler runs a debounced Repo.GC of each chain a backup was deleted
// from (FORMAT.md §7: gc is safe at any time from any node; it skips a
// chain while a backup holds its writer lock). Each deletion pushes the
// chain's gc delay later; the request's secrets of the latest deletion are
// the ones the gc opens the target with (held in memory only). A run that
// asks for a retry (the chain was busy) runs again a delay later, at most
// maxGCRetries times.
type gcScheduler struct {
	delay, minAge time.Duration
	run           func(ctx context.Context, k gcKey, secrets map[string]string) (retry bool)

	mu      sync.Mutex
	pending map[gcKey]*time.Timer
	swept   map[string]time.Time // target -> last sweep of temporary files
	running map[gcKey]int        // gcs of the chain running now (a retry may overlap a new deletion's)
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func newGCScheduler(delay, minAge time.Duration, run func(context.Context, gcKey, map[string]string) bool) *gcScheduler {
	ctx, cancel := context.WithCancel(context.Background())
	return &gcScheduler{delay: delay, minAge: minAge, run: run, pending: map[gcKey]*time.Timer{}, running: map[gcKey]int{}, ctx: ctx, cancel: cancel}
}

// tempSweepEvery spaces the background sweeps of one target's temporary
// files (s3chain.Repo.SweepTemps walks the whole target).
const tempSweepEvery = time.Hour

// sweepDue reports whether target's temporary files are due a sweep, and
// if so counts it as done now.
func (g *gcScheduler) sweepDue(target string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if last, ok := g.swept[target]; ok && time.Since(last) < tempSweepEvery {
		return false
	}
	if g.swept == nil {
		g.swept = map[string]time.Time{}
	}
	g.swept[target] = time.Now()
	return true
}

// schedule (re)starts the chain's timer; a delay of 0 disables background gc.
func (g *gcScheduler) schedule(k gcKey, secrets map[string]string) {
	if g == nil || g.delay <= 0 {
		return
	}
	g.arm(k, maps.Clone(secrets), 0, true)
}

// arm starts the chain's timer for run number attempt. A deletion
// (replace) supersedes a pending timer; a retry does not.
func (g *gcScheduler) arm(k gcKey, secrets map[string]string, attempt int, replace bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ctx.Err() != nil {
		return
	}
	if t, ok := g.pending[k]; ok {
		if !replace {
			return // a later deletion's gc is pending: it covers this one
		}
		if t.Stop() {
			g.wg.Done() // the stopped timer's run will never happen
		}
	}
	g.wg.Add(1)
	var t *time.Timer
	t = time.AfterFunc(g.delay, func() {
		defer g.wg.Done()
		g.mu.Lock()
		if g.pending[k] == t { // not replaced by a later deletion's timer
			delete(g.pending, k)
		}
		g.running[k]++
		g.mu.Unlock()
		retry := g.run(g.ctx, k, secrets)
		g.ended(k)
		if retry && attempt < maxGCRetries {
			g.arm(k, secrets, attempt+1, false)
		}
	})
	g.pending[k] = t
}

// gcMetrics count background gcs and the bytes they freed.
type gcMetrics struct {
	runs  *prometheus.CounterVec
	bytes prometheus.Counter
}

func newGCMetrics(reg prometheus.Registerer) *gcMetrics {
	m := &gcMetrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chainvol_gc_runs_total",
			Help: "Background gcs after backup deletions by result (success, skipped: a backup held the chain, failure)."}, []string{"result"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "chainvol_gc_deleted_bytes_total",
			Help: "Bytes of block objects deleted by background gcs."}),
	}
	reg.MustRegister(m.runs, m.bytes)
	for _, r := range []string{"success", "skipped", "failure"} { // present from the start, as newMetrics' counters
		m.runs.WithLabelValues(r)
	}
	return m
}

// collect is the gcScheduler's run: the chain's retention policy
// (retention.go), then one Repo.GC of the chain, logged and
// counted. It asks for a retry when a backup of the chain was running (the
// gc skipped it) or the target failed.
func (d *core) collect(ctx context.Context, k gcKey, secrets map[string]string) (retry bool) {
	start := time.Now()
	rec := jobrec.Start(jobrec.DirOf(d.opts.StateDir), jobrec.Record{Kind: jobrec.KindGC,
		What: "gc of " + k.target + ":" + k.chain, Backup: k.target + ":" + k.chain})
	defer rec.End()
	repo, err := d.targets.Open(ctx, k.target, secrets)
	var st s3chain.GCStats
	if err == nil {
		if rerr := d.applyRetention(ctx, repo, k, secrets); rerr != nil {
			klog.ErrorS(rerr, "retention pass failed; the gc goes on, the policy is applied again at the chain's next ready backup", "target", k.target, "chain", k.chain)
		}
		st, err = repo.GC(ctx, s3chain.GCOptions{Chain: k.chain, MinAge: d.gc.minAge})
		if err == nil && d.gc.sweepDue(k.target) {
			st.TempFiles, st.TempBytes, err = repo.SweepTemps(ctx, d.gc.minAge)
		}
	}
	result := "success"
	switch {
	case err != nil:
		result = "failure"
		klog.ErrorS(err, "background gc failed; retried a -gc-delay later (at most 5 times), else blocks stay until the next deletion or chainvolctl gc", "target", k.target, "chain", k.chain)
	case st.SkippedChains > 0:
		result = "skipped"
		klog.InfoS("background gc skipped: a backup of the chain is running; retried a -gc-delay later", "target", k.target, "chain", k.chain)
	default:
		// tempFiles/tempBytes: a killed writer's temporary files, swept at
		// most once per target and tempSweepEvery.
		klog.InfoS("background gc done", "target", k.target, "chain", k.chain, "blocks", st.Blocks,
			"deletedBlocks", st.DeletedBlocks, "deletedBytes", st.DeletedBytes, "youngBlocks", st.YoungBlocks,
			"tempFiles", st.TempFiles, "tempBytes", st.TempBytes, "minAge", d.gc.minAge, "duration", time.Since(start))
	}
	if d.gcMetrics != nil {
		d.gcMetrics.runs.WithLabelValues(result).Inc()
		d.gcMetrics.bytes.Add(float64(st.DeletedBytes))
	}
	if st.DeletedBlocks > 0 {
		d.index.invalidate(k.target)
	}
	return result != "success" && ctx.Err() == nil
}
