package driver

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/volume"
)

// metricName matches the driver's metric names in a PromQL query.
var metricName = regexp.MustCompile(`\b(?:chainvol|grpc_server)_[a-z0-9_]+\b`)

// dashboardMetrics returns the metric families the chart's Grafana
// dashboard queries (panels and template variables), a histogram's
// _bucket, _sum and _count as the histogram.
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../charts/chainvol/dashboards/chainvol.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct {
			List []struct{ Definition string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		exprs = append(exprs, v.Definition)
	}
	var out []string
	for _, e := range exprs {
		for _, m := range metricName.FindAllString(e, -1) {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				m = strings.TrimSuffix(m, suffix)
			}
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	slices.Sort(out)
	return out
}

// documentedMetrics returns the names in the first column of
// docs/metrics.md's table.
func documentedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		first := strings.Split(l, "|")[1]
		for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(first, -1) {
			names[m[1]] = true
		}
	}
	return names
}

// TestDashboardMetricsExist: every metric the chart's Grafana dashboard
// queries is listed in docs/metrics.md and served by the driver: scraped
// from /metrics after a backup (through the gRPC interceptors), a recorded upload failure, a restore to its
// end, and while a restore runs (a job that holds, under the restore key,
// so the collector of running restores has one to report). A renamed or
// dropped metric, or a typo in a query, fails here instead of showing an
// empty panel (issue 33).
func TestDashboardMetricsExist(t *testing.T) {
	queried := dashboardMetrics(t)
	for _, want := range []string{"chainvol_backups_total", "chainvol_restores_total", "chainvol_restore_progress_bytes",
		"chainvol_pool_free_bytes", "chainvol_gc_runs_total"} {
		if !slices.Contains(queried, want) {
			t.Errorf("the dashboard does not show %s (backups, restores, pool, gc)", want)
		}
	}
	documented := documentedMetrics(t)

	e := newNodeEnv(t)
	lv := e.volume("pvc-dashboard", volume.Record{AccessType: accessBlock, PVCNamespace: "ns", PVCName: "dash"}.Encode())
	backupAndScrape(t, e, lv.ID, "snap-dashboard")       // through the gRPC interceptors: grpc_server_*
	snap := backupReady(t, e.d, lv.ID, "snap-dashboard") // the same call again: its id
	restoreToEnd(t, e, snap)
	recorded, err := e.d.vols.SnapshotOfBackup(e.ctx, snap)
	if err == nil {
		_, err = volume.Update(e.ctx, e.pool, recorded.ID, func(r *volume.Record) { r.UploadFailedAt = time.Now() })
	}
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	e.d.vols.StartJob(volume.RestoreKey("pvc-held"), "restore held by the test", func(ctx context.Context, j *volume.Job) error {
		j.SetSubject("lv-held")
		j.Progress(s3chain.Progress{DoneBytes: 1 << 20, TotalBytes: 4 << 20})
		<-release
		return nil
	})
	fams := scrape(t, e.d)
	for _, m := range queried {
		if !documented[m] {
			t.Errorf("the dashboard queries %s, which docs/metrics.md does not list", m)
		}
		if len(fams[m].GetMetric()) == 0 {
			t.Errorf("the dashboard queries %s, which the driver's /metrics does not serve", m)
		}
	}
}

// restoreToEnd restores backup snapshot snap into a new volume, asking
// again while CreateVolume answers Aborted with progress.
func restoreToEnd(t *testing.T, e *nodeEnv, snap string) {
	t.Helper()
	req := &csi.CreateVolumeRequest{Name: "pvc-dashboard-restored",
		VolumeCapabilities:  []*csi.VolumeCapability{blockCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap}}}}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
		_, err := e.d.CreateVolume(ctx, req)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("restore of %s: %v", snap, err)
		}
	}
}
