package driver

import (
	"cmp"
	"context"
	"time"

	"google.golang.org/grpc"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/volume"
)

// DefaultShutdownTimeout bounds the driver's stop on SIGTERM or SIGINT
// (-shutdown-timeout). It must stay below the DaemonSet's
// terminationGracePeriodSeconds (30 s in charts/chainvol and deploy/base),
// so that the kubelet's SIGKILL never cuts the stop short.
const DefaultShutdownTimeout = 20 * time.Second

// shutdown stops a driver whose context ended: the listener closes at
// once (GracefulStop), running jobs and background gcs are cancelled at
// the same time, so that calls waiting for a job answer as it stops; calls
// still running after half the bound are cancelled (Stop). It then waits,
// to the end of the bound, until the jobs have returned, which releases
// their chain leases and flushes the restores' checkpoints, and logs one
// line per job and gc with its state. served is closed when Serve returns.
func (d *Driver) shutdown(srv *grpc.Server, served <-chan struct{}) {
	bound := cmp.Or(d.opts.ShutdownTimeout, DefaultShutdownTimeout)
	start := time.Now()
	klog.InfoS("shutting down: refusing new calls, stopping jobs", "bound", bound)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	jobs := make(chan []volume.JobReport, 1)
	gcs := make(chan []gcReport, 1)
	go func() { jobs <- d.vols.Shutdown(ctx) }()
	go func() { gcs <- d.gc.shutdown(ctx) }()
	drainCalls(ctx, srv, served, bound/2)
	stuck := logJobs(<-jobs)
	stuck = logGCs(<-gcs) || stuck
	klog.InfoS("shut down", "duration", time.Since(start).Round(time.Millisecond), "allStopped", !stuck)
}

// drainCalls lets running calls end for up to drain, then cancels them
// and waits for their handlers until ctx ends.
func drainCalls(ctx context.Context, srv *grpc.Server, served <-chan struct{}, drain time.Duration) {
	go srv.GracefulStop()
	t := time.NewTimer(drain)
	defer t.Stop()
	select {
	case <-served:
		return
	case <-t.C:
		klog.InfoS("calls still running: cancelling them", "after", drain)
		go srv.Stop()
	case <-ctx.Done():
		go srv.Stop()
	}
	select {
	case <-served:
	case <-ctx.Done():
		klog.InfoS("calls still running at the end of the shutdown bound")
	}
}

// logJobs logs one line per job the shutdown stopped: a stopped restore
// resumes from its checkpoint on the CO's next CreateVolume, a stopped
// upload on its next CreateSnapshot. It reports whether one was still
// running at the end of the bound.
func logJobs(rs []volume.JobReport) (stuck bool) {
	for _, r := range rs {
		kv := []any{"job", r.What, "volume", r.Volume, "backup", r.Backup, "key", r.Key, "state", r.State}
		if r.Err != nil {
			kv = append(kv, "err", r.Err)
		}
		klog.InfoS("shutdown: job", kv...)
		stuck = stuck || r.State == volume.JobStillRunning
	}
	return stuck
}

// logGCs logs one line per background gc and reports whether one was
// still running at the end of the bound.
func logGCs(rs []gcReport) (stuck bool) {
	for _, r := range rs {
		klog.InfoS("shutdown: job", "job", "background gc", "target", r.key.target, "chain", r.key.chain, "state", r.state)
		stuck = stuck || r.state == volume.JobStillRunning
	}
	return stuck
}
