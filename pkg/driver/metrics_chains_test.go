package driver

import (
	"context"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	dto "github.com/prometheus/client_model/go"

	"github.com/chainvol/chainvol/pkg/volume"
)

// chainGauge returns the value of metric name for chain on target
// default, and whether it is there.
func chainGauge(fams map[string]*dto.MetricFamily, name, chain string) (float64, bool) {
	for _, m := range fams[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["chain"] == chain && labels["target"] == "default" {
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// backupReady takes a backup of volume id called name and retries
// CreateSnapshot until it is ready; it returns its snapshot id.
func backupReady(t *testing.T, d *Driver, id, name string) string {
	t.Helper()
	req := &csi.CreateSnapshotRequest{Name: name, SourceVolumeId: id, Parameters: map[string]string{"backup": "true"}}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := d.CreateSnapshot(context.Background(), req)
		if err != nil {
			t.Fatalf("CreateSnapshot %s: %v", name, err)
		}
		if resp.GetSnapshot().GetReadyToUse() {
			return resp.GetSnapshot().GetSnapshotId()
		}
		if time.Now().After(deadline) {
			t.Fatalf("backup %s not ready", name)
		}
	}
}

// TestChainMetricsAfterRestart (issue 25, item 7): a driver started on a
// pool with the volumes and backups of a previous run reports each chain's
// last-success timestamp at its first scrape, with the time of that
// backup (before, it was absent until the chain's next backup, so "backup
// too old" could not fire for a chain whose backups stopped with the
// restart); the timestamp goes with the chain's volume (DeleteVolume) and
// with its last local backup (DeleteSnapshot), also in the run that made
// it; so does the last-failure timestamp, read from the snapshot's record.
func TestChainMetricsAfterRestart(t *testing.T) {
	const success = "chainvol_backup_last_success_timestamp_seconds"
	const failure = "chainvol_backup_last_failure_timestamp_seconds"
	e := newNodeEnv(t)
	a := e.volume("pvc-a", volume.Record{AccessType: accessBlock, PVCNamespace: "ns", PVCName: "a"}.Encode())
	b := e.volume("pvc-b", volume.Record{AccessType: accessBlock, PVCNamespace: "ns", PVCName: "b"}.Encode())
	before := float64(time.Now().UnixNano()) / 1e9
	backupReady(t, e.d, a.ID, "snap-a")
	snapB := backupReady(t, e.d, b.ID, "snap-b")
	after := float64(time.Now().UnixNano()) / 1e9
	c := e.volume("pvc-c", volume.Record{AccessType: accessBlock, PVCNamespace: "ns", PVCName: "c"}.Encode())
	backupReady(t, e.d, c.ID, "snap-c")
	if _, ok := chainGauge(scrape(t, e.d), success, "ns/c"); !ok {
		t.Errorf("%s{chain=\"ns/c\"} absent after its backup", success)
	}
	if _, err := e.d.DeleteVolume(e.ctx, &csi.DeleteVolumeRequest{VolumeId: c.ID}); err != nil {
		t.Fatal(err)
	}
	if v, ok := chainGauge(scrape(t, e.d), success, "ns/c"); ok {
		t.Errorf("%s{chain=\"ns/c\"} = %v after its volume was deleted, in the run that made the backup", success, v)
	}

	e.d = e.newDriver() // the restart: same pool and state directory, new process state
	fams := scrape(t, e.d)
	for _, chain := range []string{"ns/a", "ns/b"} {
		if v, ok := chainGauge(fams, success, chain); !ok || v < before || v > after {
			t.Errorf("%s{chain=%q} right after the restart: %v (present %v), want within [%f, %f]", success, chain, v, ok, before, after)
		}
	}

	if _, err := e.d.DeleteVolume(e.ctx, &csi.DeleteVolumeRequest{VolumeId: a.ID}); err != nil {
		t.Fatal(err)
	}
	if v, ok := chainGauge(scrape(t, e.d), success, "ns/a"); ok {
		t.Errorf("%s{chain=\"ns/a\"} = %v after its volume was deleted", success, v)
	}
	failedAt := time.Date(2026, 12, 1, 2, 3, 4, 5e8, time.UTC)
	lv, err := e.d.vols.SnapshotOfBackup(e.ctx, snapB)
	if err == nil {
		_, err = volume.Update(e.ctx, e.pool, lv.ID, func(r *volume.Record) { r.UploadFailedAt = failedAt })
	}
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := chainGauge(scrape(t, e.d), failure, "ns/b"); !ok || v != unixSeconds(failedAt) {
		t.Errorf("%s{chain=\"ns/b\"} = %v (present %v), want the recorded %v", failure, v, ok, unixSeconds(failedAt))
	}
	if _, err := e.d.DeleteSnapshot(e.ctx, &csi.DeleteSnapshotRequest{SnapshotId: snapB}); err != nil {
		t.Fatal(err)
	}
	fams = scrape(t, e.d)
	for _, name := range []string{success, failure} {
		if v, ok := chainGauge(fams, name, "ns/b"); ok {
			t.Errorf("%s{chain=\"ns/b\"} = %v after its only backup was deleted", name, v)
		}
	}
}
