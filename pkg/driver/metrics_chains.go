package driver

import (
	"cmp"
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// chainCollector publishes each chain's last backup success and failure
// at scrape time, from the records of the backup snapshots in the pool
// (Record.UploadDoneAt, Record.UploadFailedAt), not from gauges set as
// uploads end: so the timestamps are there from the driver's start for
// every chain the node holds, and go when the chain's volume or its last
// local backup does. The pool is the cheapest correct source: local
// metadata read in one listing, no target request per scrape; and it
// holds the chain's newest uploaded backup while its volume exists (the
// sweep keeps it as the next FIEMAP base, volume/bases.go), whereas the
// backup-name records carry no upload times and the target's manifests
// cost requests and outlive the node's volumes.
type chainCollector struct {
	pool backend.Pool
	// def names the default target, for backups whose reference names none.
	def func() string
}

var (
	lastSuccessDesc = prometheus.NewDesc("chainvol_backup_last_success_timestamp_seconds",
		"Unix time of the last successful backup of each chain whose volume this node holds, by target and chain.",
		[]string{"target", "chain"}, nil)
	lastFailureDesc = prometheus.NewDesc("chainvol_backup_last_failure_timestamp_seconds",
		"Unix time of the last failed backup of each chain whose volume this node holds, by target and chain.",
		[]string{"target", "chain"}, nil)
)

func (chainCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- lastSuccessDesc
	ch <- lastFailureDesc
}

// Collect reads the pool's snapshots and volumes with a short deadline; an
// error reports the metrics as invalid, which fails the scrape visibly.
func (c chainCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	success, failure, err := c.chainTimes(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(lastSuccessDesc, err)
		return
	}
	for k, t := range success {
		ch <- prometheus.MustNewConstMetric(lastSuccessDesc, prometheus.GaugeValue, unixSeconds(t), k.target, k.chain)
	}
	for k, t := range failure {
		ch <- prometheus.MustNewConstMetric(lastFailureDesc, prometheus.GaugeValue, unixSeconds(t), k.target, k.chain)
	}
}

// chainTimes returns, per chain of a backup snapshot whose source volume
// is in the pool, the latest upload success and failure times. A base of
// an older driver, without a done time, counts as done when it was taken.
func (c chainCollector) chainTimes(ctx context.Context) (success, failure map[gcKey]time.Time, err error) {
	snaps, err := c.pool.List(ctx, backend.KindSnapshot)
	if err != nil {
		return nil, nil, err
	}
	vols, err := c.pool.List(ctx, backend.KindVolume)
	if err != nil {
		return nil, nil, err
	}
	held := map[string]bool{}
	for _, v := range vols {
		held[v.ID] = true
	}
	success, failure = map[gcKey]time.Time{}, map[gcKey]time.Time{}
	for _, s := range snaps {
		rec := volume.Of(s)
		ref, err := rec.BackupRef.Ref()
		if err != nil || !held[s.SourceID] { // not a backup, or its volume is gone
			continue
		}
		k := gcKey{cmp.Or(ref.Target, c.def()), ref.Chain}
		if done := rec.UploadDoneAt; rec.Upload == volume.Uploaded {
			if done.IsZero() {
				done = s.CreatedAt
			}
			success[k] = later(success[k], done)
		}
		if !rec.UploadFailedAt.IsZero() {
			failure[k] = later(failure[k], rec.UploadFailedAt)
		}
	}
	return success, failure, nil
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// unixSeconds is t as Unix seconds with sub-second precision.
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
