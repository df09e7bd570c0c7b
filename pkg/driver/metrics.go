package driver

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc/codes"
)

// metrics are the driver's Prometheus metrics, in a private registry so that
// two drivers in one process (tests) never collide.
type metrics struct {
	registry *prometheus.Registry
	calls    *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	restore  *prometheus.GaugeVec
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chainvol_csi_calls_total", Help: "CSI calls by method and gRPC code.",
		}, []string{"method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "chainvol_csi_call_duration_seconds", Help: "CSI call duration in seconds.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"method"}),
		restore: prometheus.NewGaugeVec(restoreGaugeOpts, []string{"volume", "kind"}),
	}
	m.registry.MustRegister(m.calls, m.latency, m.restore)
	return m
}

func (m *metrics) observeCall(method string, code codes.Code, d time.Duration) {
	m.calls.WithLabelValues(method, code.String()).Inc()
	m.latency.WithLabelValues(method).Observe(d.Seconds())
}

// MetricsHandler returns the HTTP handler serving the driver's metrics in
// the Prometheus text format.
func (d *Driver) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(d.metrics.registry, promhttp.HandlerOpts{})
}

// restoreGauge reports running restores' progress in bytes, by volume.
var restoreGaugeOpts = prometheus.GaugeOpts{Name: "chainvol_restore_bytes",
	Help: "Bytes of running restores by volume: done and total."}

func (m *metrics) restoreProgress(volume string, j *job) {
	m.restore.WithLabelValues(volume, "done").Set(float64(j.bytes.Load()))
	m.restore.WithLabelValues(volume, "total").Set(float64(j.total.Load()))
}

func (m *metrics) restoreDone(volume string) {
	m.restore.DeleteLabelValues(volume, "done")
	m.restore.DeleteLabelValues(volume, "total")
}
