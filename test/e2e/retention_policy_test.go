package e2e

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
	s3 := startS3(t)
	url := s3.url("")
	withTarget := s3.opts(url)
	n := startDriver(t, "node-a", func(o *driver.Options) {
		withTarget(o)
		o.GCDelay, o.GCMinAge = 200*time.Millisecond, 0
	})
	repo := openRepo(t, url, s3.creds)
	vol := createVolume(t, n.Ctrl, "pvc-pol", volSize, mountCap("ext4"), pvcParams("shop", "pol"))
	plain := backupID(t, backup(t, n.Ctrl, vol.GetVolumeId(), "snap-plain", offsite))

	policy := retention.Policy{Last: 2, Hourly: 2}
	params := backupParams(offsite)
	params[driver.ParamKeepLast], params[driver.ParamKeepHourly] = "2", "2"
	seen := map[string]time.Time{} // the policy's backups still on the target, as the driver should leave them
	var first, dropped string
	for i := range 5 {
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
