package driver

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc"

	"github.com/chainvol/chainvol/pkg/version"
	"github.com/chainvol/chainvol/pkg/volume"
)

// scrape fetches the driver's /metrics over HTTP and parses it.
func scrape(t *testing.T, d *Driver) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(d.MetricsHandler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// lastSuccess returns chainvol_backup_last_success_timestamp_seconds of
// chain on target default, 0 when absent.
func lastSuccess(fams map[string]*dto.MetricFamily, chain string) float64 {
	for _, m := range fams["chainvol_backup_last_success_timestamp_seconds"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["chain"] == chain && labels["target"] == "default" {
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// TestMetricsScrape: /metrics of a driver over a real pool carries the
// build info of pkg/version, the pool's size and free bytes, Go and process
// collectors, gRPC server metrics, and a last-success timestamp per chain
// that appears after a backup and moves forward with the next one (issue 17).
func TestMetricsScrape(t *testing.T) {
	e := newNodeEnv(t)
	fams := scrape(t, e.d)
	for _, name := range []string{"chainvol_build_info", "chainvol_pool_size_bytes", "chainvol_pool_free_bytes",
		"go_goroutines", "process_resident_memory_bytes", "chainvol_backups_total", "chainvol_restores_total",
		"chainvol_backups_in_flight"} {
		if fams[name] == nil {
			t.Errorf("metric %s missing from /metrics", name)
		}
	}
	bi := fams["chainvol_build_info"].GetMetric()
	v := version.Get()
	if len(bi) != 1 || bi[0].GetGauge().GetValue() != 1 {
		t.Fatalf("chainvol_build_info = %v", bi)
	}
	for _, l := range bi[0].GetLabel() {
		want := map[string]string{"version": v.Version, "commit": v.Commit, "goversion": v.GoVersion}[l.GetName()]
		if l.GetValue() != want {
			t.Errorf("chainvol_build_info{%s=%q}, want %q", l.GetName(), l.GetValue(), want)
		}
	}
	if size := fams["chainvol_pool_size_bytes"].GetMetric()[0].GetGauge().GetValue(); size < 7<<30 {
		t.Errorf("chainvol_pool_size_bytes = %v, want about 8 GiB", size)
	}
	for name := range fams {
		if strings.HasPrefix(name, "chainvol_") && strings.Contains(name, "kind") {
			t.Errorf("metric %s: no kind-split metrics", name)
		}
	}
	if lastSuccess(fams, "ns/data") != 0 {
		t.Fatal("a last-success timestamp before any backup")
	}

	lv := e.volume("pvc-metrics", volume.Record{AccessType: accessBlock, PVCNamespace: "ns", PVCName: "data"}.Encode())
	first := backupAndScrape(t, e, lv.ID, "snap-1")
	if first == 0 || first < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Fatalf("last success after the first backup = %v", first)
	}
	time.Sleep(20 * time.Millisecond)
	second := backupAndScrape(t, e, lv.ID, "snap-2")
	if second <= first {
		t.Errorf("last success did not move: %v then %v", first, second)
	}
	fams = scrape(t, e.d)
	if got := fams["grpc_server_handled_total"]; got == nil || !strings.Contains(got.String(), "CreateSnapshot") {
		t.Errorf("grpc_server_handled_total has no CreateSnapshot calls: %v", got)
	}
	for _, m := range fams["chainvol_backups_total"].GetMetric() {
		if m.GetLabel()[0].GetValue() == "success" && m.GetCounter().GetValue() != 2 {
			t.Errorf("chainvol_backups_total{result=success} = %v, want 2", m.GetCounter().GetValue())
		}
	}
}

// backupAndScrape takes a backup of volume id into the chain ns/data of the
// default target, through the gRPC interceptors as the sidecar would call
// it, and returns the chain's last-success timestamp.
func backupAndScrape(t *testing.T, e *nodeEnv, id, name string) float64 {
	t.Helper()
	req := &csi.CreateSnapshotRequest{Name: name, SourceVolumeId: id, Parameters: map[string]string{"backup": "true"}}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := e.d.logInterceptor(context.Background(), req, &grpcInfoCreateSnapshot, func(ctx context.Context, r any) (any, error) {
			return e.d.CreateSnapshot(ctx, r.(*csi.CreateSnapshotRequest))
		})
		if err != nil {
			t.Fatalf("CreateSnapshot %s: %v", name, err)
		}
		if resp.(*csi.CreateSnapshotResponse).GetSnapshot().GetReadyToUse() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("backup %s not ready", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return lastSuccess(scrape(t, e.d), "ns/data")
}

var grpcInfoCreateSnapshot = grpc.UnaryServerInfo{FullMethod: "/csi.v1.Controller/CreateSnapshot"}

// TestRestoreMetricsWithoutWaiter: a restore is counted when its job ends,
// not when a CreateVolume call happens to see it end, and its progress
// gauges are read from the running job, so nothing stale stays behind. The
// CreateVolume here gives up at once (a deadline shorter than its answer
// margin) and is never retried; the old code counted nothing and kept the
// progress gauges it had set.
func TestRestoreMetricsWithoutWaiter(t *testing.T) {
	e := newNodeEnv(t)
	lv := e.volume("pvc-metrics-src", volume.Record{AccessType: accessBlock, PVCNamespace: "ns", PVCName: "src"}.Encode())
	backupAndScrape(t, e, lv.ID, "snap-restore-src")
	sr, err := e.d.CreateSnapshot(context.Background(), &csi.CreateSnapshotRequest{Name: "snap-restore-src",
		SourceVolumeId: lv.ID, Parameters: map[string]string{"backup": "true"}}) // the same call again: its id
	if err != nil {
		t.Fatal(err)
	}
	snap := sr.GetSnapshot().GetSnapshotId()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = e.d.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-metrics-restored",
		VolumeCapabilities:  []*csi.VolumeCapability{blockCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap}}}})
	if err == nil {
		t.Log("the restore answered within the deadline; the job still counts it once")
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		fams := scrape(t, e.d)
		var ok float64
		for _, m := range fams["chainvol_restores_total"].GetMetric() {
			if m.GetLabel()[0].GetValue() == "success" {
				ok = m.GetCounter().GetValue()
			}
		}
		// The job counts the restore just before it ends, and its gauges
		// go when it has ended: both within moments of each other.
		g := fams["chainvol_restore_progress_bytes"]
		if ok == 1 && len(g.GetMetric()) == 0 {
			return
		}
		if ok > 1 || time.Now().After(deadline) {
			t.Fatalf("chainvol_restores_total{result=success} = %v, want 1 once the job ends; progress gauges %v", ok, g)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
