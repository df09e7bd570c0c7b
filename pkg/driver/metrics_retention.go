package driver

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// retentionMetrics publish what the driver's retention passes did
// (retention.go): backups kept per chain, deletions, locked skips, bytes
// freed, and the retain-until span of the kept backups per target.
type retentionMetrics struct {
	kept    *prometheus.GaugeVec
	deleted prometheus.Counter
	locked  prometheus.Counter
	freed   prometheus.Counter

	mu    sync.Mutex
	spans map[gcKey]retainSpan // the last pass's, by chain
}

// retainSpan is the oldest and newest retain-until date of a chain's kept
// backups; zero when none is under Object Lock.
type retainSpan struct{ oldest, newest time.Time }

var (
	retainOldestDesc = prometheus.NewDesc("chainvol_retention_retain_until_oldest_timestamp_seconds",
		"Unix time of the earliest S3 Object Lock retain-until date of the backups the driver's retention passes keep, by target.",
		[]string{"target"}, nil)
	retainNewestDesc = prometheus.NewDesc("chainvol_retention_retain_until_newest_timestamp_seconds",
		"Unix time of the latest S3 Object Lock retain-until date of the backups the driver's retention passes keep, by target.",
		[]string{"target"}, nil)
)

func newRetentionMetrics(reg prometheus.Registerer) *retentionMetrics {
	m := &retentionMetrics{
		kept: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "chainvol_retention_retained_backups",
			Help: "Backups made with a retention policy that the last retention pass of the chain kept (those under Object Lock included), by target and chain."},
			[]string{"target", "chain"}),
		deleted: prometheus.NewCounter(prometheus.CounterOpts{Name: "chainvol_retention_deleted_backups_total",
			Help: "Backups the driver deleted because their class's retention policy no longer keeps them."}),
		locked: prometheus.NewCounter(prometheus.CounterOpts{Name: "chainvol_retention_locked_backups_total",
			Help: "Times a retention pass left a backup its policy drops because it is under S3 Object Lock retention."}),
		freed: prometheus.NewCounter(prometheus.CounterOpts{Name: "chainvol_retention_freed_bytes_total",
			Help: "Bytes of block objects that only the backups deleted by retention referenced (freed by the background gc that follows)."}),
		spans: map[gcKey]retainSpan{},
	}
	reg.MustRegister(m.kept, m.deleted, m.locked, m.freed, m)
	return m
}

// observe records one retention pass of chain k. A nil m records nothing.
func (m *retentionMetrics) observe(k gcKey, kept, deleted, locked int, freed int64, span retainSpan) {
	if m == nil {
		return
	}
	m.kept.WithLabelValues(k.target, k.chain).Set(float64(kept))
	m.deleted.Add(float64(deleted))
	m.locked.Add(float64(locked))
	m.freed.Add(float64(freed))
	m.mu.Lock()
	m.spans[k] = span
	m.mu.Unlock()
}

// Describe is the retain-until gauges' (prometheus.Collector).
func (m *retentionMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- retainOldestDesc
	ch <- retainNewestDesc
}

// Collect publishes, per target, the span of its chains' last passes;
// a target none of whose kept backups is locked has no sample.
func (m *retentionMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	byTarget := map[string]retainSpan{}
	for k, s := range m.spans {
		byTarget[k.target] = byTarget[k.target].widen(s)
	}
	m.mu.Unlock()
	for tgt, s := range byTarget {
		if s.oldest.IsZero() {
			continue
		}
		ch <- prometheus.MustNewConstMetric(retainOldestDesc, prometheus.GaugeValue, unixSeconds(s.oldest), tgt)
		ch <- prometheus.MustNewConstMetric(retainNewestDesc, prometheus.GaugeValue, unixSeconds(s.newest), tgt)
	}
}

// widen is the span covering s and o (a zero side is none).
func (s retainSpan) widen(o retainSpan) retainSpan {
	if !o.oldest.IsZero() && (s.oldest.IsZero() || o.oldest.Before(s.oldest)) {
		s.oldest = o.oldest
	}
	s.newest = later(s.newest, o.newest)
	return s
}

// add widens s by one retain-until date (zero: not locked).
func (s retainSpan) add(t time.Time) retainSpan { return s.widen(retainSpan{t, t}) }
