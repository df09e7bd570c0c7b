package driver

import (
	"context"
	"net/http"
	"sync"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/version"
	"github.com/chainvol/chainvol/pkg/volume"
)

// metrics are the driver's Prometheus metrics, in a private registry so that
// two drivers in one process (tests) never collide. Names follow the
// Prometheus naming guide (base units, _total for counters, no label whose
// values cannot be summed); docs/metrics.md lists them with alert examples.
type metrics struct {
	registry *prometheus.Registry
	// grpc: grpc_server_started_total, grpc_server_handled_total,
	// grpc_server_handling_seconds (go-grpc-middleware's provider, the names
	// the common gRPC dashboards use).
	grpc *grpcprom.ServerMetrics

	// The progress of running restores is read from their jobs at each
	// scrape (restoreCollector), not kept here.
	restores        *prometheus.CounterVec
	restoreBytes    prometheus.Counter
	restoreDuration *prometheus.HistogramVec
	// hydrationFetches: latency of instant restores' block fetches
	// (pkg/lazy Options.OnFetch), on demand or by the background job.
	hydrationFetches *prometheus.HistogramVec

	backups        *prometheus.CounterVec
	backupBytes    *prometheus.CounterVec
	backupDuration *prometheus.HistogramVec
	backupInFlight prometheus.Gauge
	// The last success and failure of each chain are read from the pool's
	// records at each scrape (chainCollector), not kept here.
	poolOnce sync.Once
}

// jobBuckets are durations in seconds of backups and restores: 1 s to ~4.5 h.
var jobBuckets = prometheus.ExponentialBuckets(1, 2.5, 10)

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		grpc: grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(
			grpcprom.WithHistogramBuckets(prometheus.ExponentialBuckets(0.001, 4, 10)))),
		restores: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chainvol_restores_total",
			Help: "Finished restores by result (success or failure)."}, []string{"result"}),
		restoreBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "chainvol_restore_written_bytes_total",
			Help: "Bytes written into volumes by restores, successful or not."}),
		restoreDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "chainvol_restore_duration_seconds",
			Help: "Wall time of finished restores in seconds, by result.", Buckets: jobBuckets}, []string{"result"}),
		hydrationFetches: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "chainvol_hydration_fetch_seconds",
			Help:    "Latency of one block fetch of an instant restore (GET, decode, digest check, write), in seconds, by result.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}, []string{"result"}),
		backups: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chainvol_backups_total",
			Help: "Finished backup uploads by result (success or failure)."}, []string{"result"}),
		backupBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chainvol_backup_uploaded_bytes_total",
			Help: "Raw bytes of blocks uploaded by successful backups, by target."}, []string{"target"}),
		backupDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "chainvol_backup_duration_seconds",
			Help: "Wall time of finished backup uploads in seconds, by result.", Buckets: jobBuckets}, []string{"result"}),
		backupInFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "chainvol_backups_in_flight",
			Help: "Backup uploads running now."}),
	}
	v := version.Get()
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{Name: "chainvol_build_info",
		Help:        "Always 1; the labels name the running build (pkg/version).",
		ConstLabels: prometheus.Labels{"version": v.Version, "commit": v.Commit, "goversion": v.GoVersion}})
	buildInfo.Set(1)
	m.registry.MustRegister(m.grpc, buildInfo,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.restores, m.restoreBytes, m.restoreDuration, m.hydrationFetches,
		m.backups, m.backupBytes, m.backupDuration, m.backupInFlight)
	for _, r := range []string{"success", "failure"} { // present from the start, so rate() and alerts see 0
		m.restores.WithLabelValues(r)
		m.backups.WithLabelValues(r)
	}
	return m
}

// MetricsHandler returns the HTTP handler serving the driver's metrics in
// the Prometheus text format. The pool's size and free bytes are read at
// each scrape, and so are the chains' last backup times (chainCollector).
func (d *Driver) MetricsHandler() http.Handler {
	d.metrics.poolOnce.Do(func() {
		d.metrics.registry.MustRegister(poolCollector{d.pool}, restoreCollector{d.vols},
			chainCollector{pool: d.pool, def: d.targets.Default}, basesDropped(d.vols))
	})
	return promhttp.HandlerFor(d.metrics.registry, promhttp.HandlerOpts{})
}

// restoreDone counts a finished restore (err nil: success) with its bytes
// and duration. The restore job calls it as it ends, whether or not a
// CreateVolume call is waiting.
func (m *metrics) restoreDone(j *volume.Job, err error) {
	r := result(err)
	m.restores.WithLabelValues(r).Inc()
	m.restoreBytes.Add(float64(j.Bytes()))
	m.restoreDuration.WithLabelValues(r).Observe(time.Since(j.Started()).Seconds())
}

// hydrationFetch observes one block fetch of an instant restore.
func (m *metrics) hydrationFetch(d time.Duration, err error) {
	m.hydrationFetches.WithLabelValues(result(err)).Observe(d.Seconds())
}

// backupStarted counts a backup upload in flight; call the returned
// function with its outcome when it ends. (The chain's last success and
// failure times come from the snapshot's record: chainCollector.)
func (m *metrics) backupStarted(target string) func(s3chain.BackupStats, error) {
	m.backupInFlight.Inc()
	start := time.Now()
	return func(st s3chain.BackupStats, err error) {
		m.backupInFlight.Dec()
		r := result(err)
		m.backups.WithLabelValues(r).Inc()
		m.backupDuration.WithLabelValues(r).Observe(time.Since(start).Seconds())
		if err == nil {
			m.backupBytes.WithLabelValues(target).Add(float64(st.UploadedBytes))
		}
	}
}

// basesDropped counts the backup bases the Manager dropped because the
// pool could not pay for them (volume.Manager.BasesDroppedForSpace); the
// reason label leaves room for other reasons.
func basesDropped(vols *volume.Manager) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "chainvol_backup_bases_dropped_total",
		Help:        "Backup bases (local snapshots kept for the next incremental backup) dropped, by reason.",
		ConstLabels: prometheus.Labels{"reason": "space"}}, func() float64 { return float64(vols.BasesDroppedForSpace()) })
}

func result(err error) string {
	if err != nil {
		return "failure"
	}
	return "success"
}

// poolCollector reports the pool's capacity at scrape time.
type poolCollector struct{ pool backend.Pool }

var (
	poolSizeDesc = prometheus.NewDesc("chainvol_pool_size_bytes", "Size of the lvol pool's filesystem in bytes.", nil, nil)
	poolFreeDesc = prometheus.NewDesc("chainvol_pool_free_bytes", "Bytes available for new volumes in the lvol pool.", nil, nil)
)

func (poolCollector) Describe(ch chan<- *prometheus.Desc) { ch <- poolSizeDesc; ch <- poolFreeDesc }

// Collect reads the capacity with a short deadline; an error reports the
// metrics as invalid, which fails the scrape visibly instead of lying.
func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cp, err := c.pool.Capacity(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(poolSizeDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(poolSizeDesc, prometheus.GaugeValue, float64(cp.TotalBytes))
	ch <- prometheus.MustNewConstMetric(poolFreeDesc, prometheus.GaugeValue, float64(cp.AvailableBytes))
}
