package e2e

import (
	"context"
	"maps"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/driver"
	"github.com/chainvol/chainvol/pkg/retention"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/volume"
)

// TestClassRetentionPolicy: backups of a class with keepLast 2 and
// keepHourly 2, one after another on versitygw; after each one the
// driver's background gc leaves exactly the backups pkg/retention keeps of
// those the policy saw (the earlier survivors and the new one): the two
// newest and, as restic keeps the oldest while hourly counts are left, the
// first. A backup made without a policy stays. A dropped backup's
// snapshot id then restores NotFound and deletes as success.
func TestClassRetentionPolicy(t *testing.T) {
	n, repo := startRetentionDriver(t, startS3(t), "")
	vol := createVolume(t, n.Ctrl, "pvc-pol", volSize, mountCap("ext4"), pvcParams("shop", "pol"))
	plain := backupID(t, backup(t, n.Ctrl, vol.GetVolumeId(), "snap-plain", offsite))

	policy := retention.Policy{Last: 2, Hourly: 2}
	params := backupParams(offsite)
	params[driver.ParamKeepLast], params[driver.ParamKeepHourly] = "2", "2"
	seen := map[string]time.Time{} // the policy's backups still on the target, as the driver should leave them
	var first, dropped string
	var firstTree map[string]string
	p := stagePublish(t, n.Node, vol.GetVolumeId(), mountCap("ext4"))
	for i := range 5 {
		writeTree(t, filepath.Join(p.Path, "data"), uint64(10+i), 2*mib) // new blocks each round: a dropped backup frees some
		if i == 0 {
			firstTree = hashTree(t, p.Path)
		}
		id := backupReq(t, n.Ctrl, &csi.CreateSnapshotRequest{Name: "snap-pol-" + string(rune('a'+i)),
			SourceVolumeId: vol.GetVolumeId(), Parameters: params})
		if i == 0 {
			first = id
		} else if i == 1 {
			dropped = id // once the fourth is made: neither of the last 2 nor the oldest
		}
		ms := backupTimes(t, repo, "shop/pol")
		seen[backupID(t, id)] = ms[backupID(t, id)]
		var items []retention.Item
		for id, at := range seen {
			items = append(items, retention.Item{ID: id, Time: at})
		}
		want := map[string]bool{plain: true}
		for _, d := range retention.Apply(items, policy) {
			if d.Keep {
				want[d.ID] = true
			} else {
				delete(seen, d.ID)
			}
		}
		waitBackups(t, repo, "shop/pol", want)
	}
	if _, ok := seen[backupID(t, first)]; !ok || len(seen) != 3 {
		t.Fatalf("kept %v: want the first backup and the two newest", slices.Sorted(maps.Keys(seen)))
	}
	unpublishUnstage(t, p)
	if got := metricValue(t, n, "chainvol_retention_deleted_backups_total", nil); got != 2 {
		t.Errorf("chainvol_retention_deleted_backups_total = %v, want 2", got)
	}
	if got := metricValue(t, n, "chainvol_retention_retained_backups", map[string]string{"target": offsite, "chain": "shop/pol"}); got != 3 {
		t.Errorf("chainvol_retention_retained_backups = %v, want 3", got)
	}
	if got := metricValue(t, n, "chainvol_retention_freed_bytes_total", nil); got <= 0 {
		t.Errorf("chainvol_retention_freed_bytes_total = %v, want > 0: each round wrote new blocks", got)
	} else {
		t.Logf("retention freed %v bytes of blocks", got)
	}
	v := restore(t, n.Ctrl, restoreReq("pvc-pol-1", first, volSize, mountCap("ext4")))
	rp := stagePublish(t, n.Node, v.GetVolumeId(), mountCap("ext4"))
	sameTree(t, "the oldest backup, kept while newer ones went", rp.Path, firstTree)
	unpublishUnstage(t, rp)
	if _, err := createRestored(t, n.Ctrl, restoreReq("pvc-pol-r", dropped, volSize, mountCap("ext4")), 10*time.Second); status.Code(err) != codes.NotFound {
		t.Fatalf("restore of a backup the policy dropped: %v, want NotFound", err)
	}
	if _, err := n.Ctrl.DeleteSnapshot(rpcCtx(t), &csi.DeleteSnapshotRequest{SnapshotId: dropped}); err != nil {
		t.Fatalf("DeleteSnapshot of a backup the policy dropped: %v, want success", err)
	}
}

// backupID is the backup id in its chain of snapshot id snap.
func backupID(t *testing.T, snap string) string {
	t.Helper()
	ref, err := volume.ParseBackupID(snap)
	if err != nil {
		t.Fatal(err)
	}
	return ref.Backup
}

// backupTimes lists chain's backups on the target: creation time by id.
func backupTimes(t *testing.T, repo *s3chain.Repo, chain string) map[string]time.Time {
	t.Helper()
	ms, err := repo.Backups(context.Background(), chain)
	if err != nil {
		t.Fatalf("list the backups of %s: %v", chain, err)
	}
	out := map[string]time.Time{}
	for _, m := range ms {
		out[m.ID] = m.CreatedAt
	}
	return out
}

// waitBackups waits (30 s at most) until chain holds exactly the backups
// of want.
func waitBackups(t *testing.T, repo *s3chain.Repo, chain string, want map[string]bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := slices.Sorted(maps.Keys(backupTimes(t, repo, chain)))
		if slices.Equal(got, slices.Sorted(maps.Keys(want))) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("chain %s holds %v, want %v", chain, got, slices.Sorted(maps.Keys(want)))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestClassRetentionLocked: on a target with S3 Object Lock (retain=1h),
// a class with keepLast 1 deletes nothing within the hour: each backup the
// policy drops is skipped and counted, the chain keeps all three, and the
// metrics report them as retained with their retain-until span.
func TestClassRetentionLocked(t *testing.T) {
	n, repo := startRetentionDriver(t, s3TargetOf(t, testutil.StartS3ObjectLock(t)), "&lock=governance&retain=1h")
	vol := createVolume(t, n.Ctrl, "pvc-pol-l", volSize, mountCap("ext4"), pvcParams("shop", "locked"))
	params := backupParams(offsite)
	params[driver.ParamKeepLast] = "1"
	want := map[string]bool{}
	start := time.Now()
	for i := range 3 {
		id := backupReq(t, n.Ctrl, &csi.CreateSnapshotRequest{Name: "snap-pol-l" + string(rune('a'+i)),
			SourceVolumeId: vol.GetVolumeId(), Parameters: params})
		want[backupID(t, id)] = true
	}
	deadline := time.Now().Add(30 * time.Second)
	for metricValue(t, n, "chainvol_retention_locked_backups_total", nil) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("no retention pass counted the two locked backups keepLast 1 drops")
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitBackups(t, repo, "shop/locked", want)
	// Two passes may each count the first backup locked before the pass
	// after the third backup ran: wait for that one's gauge.
	labels := map[string]string{"target": offsite, "chain": "shop/locked"}
	for got := metricValue(t, n, "chainvol_retention_retained_backups", labels); got != 3; got = metricValue(t, n, "chainvol_retention_retained_backups", labels) {
		if time.Now().After(deadline) {
			t.Fatalf("chainvol_retention_retained_backups = %v, want 3 (one kept, two locked)", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
	oldest := metricValue(t, n, "chainvol_retention_retain_until_oldest_timestamp_seconds", map[string]string{"target": offsite})
	newest := metricValue(t, n, "chainvol_retention_retain_until_newest_timestamp_seconds", map[string]string{"target": offsite})
	hour := float64(start.Add(time.Hour).Unix())
	if oldest < hour-5 || newest < oldest || newest > hour+120 {
		t.Errorf("retain-until span [%v, %v], want within [start+1h, start+1h+2m] (start+1h = %v)", oldest, newest, hour)
	}
}

// metricValue scrapes n's /metrics and returns the value of the sample of
// name whose labels include labels (0 when there is none).
func metricValue(t *testing.T, n *csitest.Node, name string, labels map[string]string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	n.Metrics.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
next:
	for _, m := range fams[name].GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// startRetentionDriver starts a driver whose target offsite is s3 (its
// URL options extended by opts) with a background gc 200 ms after each
// trigger and no grace for young blocks, and opens that target.
func startRetentionDriver(t *testing.T, s3 s3Target, opts string) (*csitest.Node, *s3chain.Repo) {
	t.Helper()
	url := s3.url("") + opts
	withTarget := s3.opts(url)
	n := startDriver(t, "node-a", func(o *driver.Options) {
		withTarget(o)
		o.GCDelay, o.GCMinAge = 200*time.Millisecond, 0
	})
	return n, openRepo(t, url, s3.creds)
}

// TestClassRetentionGroup: group backups of two volumes with keepLast 1
// are kept or dropped together: a later single backup of one volume makes
// its chain's policy drop its group member, which stays while the other
// chain keeps the group; a second group then drops the first one from both
// chains, and the single backup.
func TestClassRetentionGroup(t *testing.T) {
	n, repo := startRetentionDriver(t, startS3(t), "")
	gc := csi.NewGroupControllerClient(n.Conn)
	a := createVolume(t, n.Ctrl, "pvc-ga", volSize, mountCap("ext4"), pvcParams("shop", "ga"))
	b := createVolume(t, n.Ctrl, "pvc-gb", volSize, mountCap("ext4"), pvcParams("shop", "gb"))
	params := backupParams(offsite)
	params[driver.ParamKeepLast] = "1"
	group := func(name string) (string, string) {
		g := createGroup(t, gc, &csi.CreateVolumeGroupSnapshotRequest{Name: name,
			SourceVolumeIds: []string{a.GetVolumeId(), b.GetVolumeId()}, Parameters: params})
		ids := map[string]string{}
		for _, s := range g.GetSnapshots() {
			ids[s.GetSourceVolumeId()] = backupID(t, s.GetSnapshotId())
		}
		return ids[a.GetVolumeId()], ids[b.GetVolumeId()]
	}
	g1a, g1b := group("group-1")
	single := backupID(t, backupReq(t, n.Ctrl, &csi.CreateSnapshotRequest{Name: "snap-ga",
		SourceVolumeId: a.GetVolumeId(), Parameters: params}))
	waitMetric(t, n, "chainvol_retention_retained_backups", map[string]string{"target": offsite, "chain": "shop/ga"}, 2)
	waitBackups(t, repo, "shop/ga", map[string]bool{g1a: true, single: true})
	waitBackups(t, repo, "shop/gb", map[string]bool{g1b: true})

	g2a, g2b := group("group-2")
	waitBackups(t, repo, "shop/ga", map[string]bool{g2a: true})
	waitBackups(t, repo, "shop/gb", map[string]bool{g2b: true})
}

// waitMetric waits (30 s at most) until metricValue is want.
func waitMetric(t *testing.T, n *csitest.Node, name string, labels map[string]string, want float64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for metricValue(t, n, name, labels) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s%v = %v, want %v", name, labels, metricValue(t, n, name, labels), want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
