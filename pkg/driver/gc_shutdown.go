package driver

import (
	"context"
	"sort"

	"github.com/chainvol/chainvol/pkg/volume"
)

// gcReport is what the scheduler's shutdown says of one chain's gc.
type gcReport struct {
	key   gcKey
	state string // volume.JobStopped, volume.JobFinished, volume.JobStillRunning, or gcDropped
}

// gcDropped is the state of a gc whose timer had not fired: it does not
// run after the restart; the chain's blocks stay for the next deletion's
// gc or `chainvolctl gc`.
const gcDropped = "dropped before it started"

// ended notes that one run of k's gc returned.
func (g *gcScheduler) ended(k gcKey) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running[k]--; g.running[k] <= 0 {
		delete(g.running, k)
	}
}

// shutdown cancels pending and running gcs and waits, while ctx allows,
// until the running ones have returned, so that their gc leases are
// deleted (s3chain.Repo.GC releases its lease in a defer). No gc starts
// afterwards. It reports each gc that was pending or running, in key
// order; a nil scheduler reports none.
func (g *gcScheduler) shutdown(ctx context.Context) []gcReport {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	g.cancel()
	var out []gcReport
	running := make([]gcKey, 0, len(g.running)+len(g.pending))
	for k := range g.running {
		running = append(running, k)
	}
	for k, t := range g.pending {
		if t.Stop() {
			g.wg.Done()
			out = append(out, gcReport{k, gcDropped})
		} else if g.running[k] == 0 { // fired, waiting for the lock to start
			running = append(running, k)
		}
		delete(g.pending, k)
	}
	g.mu.Unlock()
	done := make(chan struct{})
	go func() { g.wg.Wait(); close(done) }()
	state := volume.JobStopped
	select {
	case <-done:
	case <-ctx.Done():
		state = volume.JobStillRunning
	}
	for _, k := range running {
		out = append(out, gcReport{k, state})
	}
	sort.Slice(out, func(a, b int) bool {
		return out[a].key.target+":"+out[a].key.chain < out[b].key.target+":"+out[b].key.chain
	})
	return out
}

// stop is shutdown without a bound or report (tests).
func (g *gcScheduler) stop() { g.shutdown(context.Background()) }
