package driver

import (
	"github.com/prometheus/client_golang/prometheus"
)

// retentionMetrics publish what the driver's retention passes did
// (retention.go), per target and chain.
type retentionMetrics struct {
	kept    *prometheus.GaugeVec
	deleted prometheus.Counter
	locked  prometheus.Counter
	freed   prometheus.Counter
}

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
	}
	reg.MustRegister(m.kept, m.deleted, m.locked, m.freed)
	return m
}

// observe records one retention pass of chain k. A nil m records nothing.
func (m *retentionMetrics) observe(k gcKey, kept, deleted, locked int, freed int64) {
	if m == nil {
		return
	}
	m.kept.WithLabelValues(k.target, k.chain).Set(float64(kept))
	m.deleted.Add(float64(deleted))
	m.locked.Add(float64(locked))
	m.freed.Add(float64(freed))
}
