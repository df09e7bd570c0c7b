package driver

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/chainvol/chainvol/pkg/volume"
)

// restoreCollector publishes the progress of the running restores at
// scrape time, read from their jobs in the volume Manager: the jobs are
// the one place that state lives, so a restore that ends while no
// CreateVolume call waits leaves no stale gauge behind.
type restoreCollector struct{ vols *volume.Manager }

var (
	restoreProgressDesc = prometheus.NewDesc("chainvol_restore_progress_bytes",
		"Bytes written so far by each running restore, by volume id.", []string{"volume"}, nil)
	restoreSizeDesc = prometheus.NewDesc("chainvol_restore_size_bytes",
		"Size in bytes of the backup each running restore replays, by volume id.", []string{"volume"}, nil)
)

func (restoreCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- restoreProgressDesc
	ch <- restoreSizeDesc
}

// Collect reports each running restore that has its lvol (a restore still
// reading its backup's manifests has none yet, so no volume id).
func (c restoreCollector) Collect(ch chan<- prometheus.Metric) {
	for _, j := range c.vols.RunningRestores() {
		id := j.Subject()
		if id == "" {
			continue
		}
		ch <- prometheus.MustNewConstMetric(restoreProgressDesc, prometheus.GaugeValue, float64(j.Bytes()), id)
		ch <- prometheus.MustNewConstMetric(restoreSizeDesc, prometheus.GaugeValue, float64(j.Total()), id)
	}
}
