package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	k8stesting "k8s.io/client-go/testing"

	"github.com/chainvol/chainvol/pkg/retention"
)

func vs(name string, minute int, ready, deleting bool) snapv1.VolumeSnapshot {
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	v := snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(minute) * time.Minute))},
		Status: &snapv1.VolumeSnapshotStatus{ReadyToUse: &ready}}
	if deleting {
		v.DeletionTimestamp = &metav1.Time{Time: t0}
	}
	return v
}

func names(s []snapv1.VolumeSnapshot) []string {
	var out []string
	for _, v := range s {
		out = append(out, v.Name)
	}
	slices.Sort(out)
	return out
}

// TestToPrune: keep-last-N counts ready snapshots only, keeps newer ones
// still uploading, skips those already being deleted, orders ties by name.
func TestToPrune(t *testing.T) {
	snaps := []snapv1.VolumeSnapshot{
		vs("a", 1, true, false), vs("b", 2, true, false), vs("c", 3, false, false), // c failed or slow
		vs("d", 4, true, false), vs("e", 5, false, false), // e uploading now
		vs("z", 0, true, true), // already being deleted
	}
	for keep, want := range map[int][]string{
		1: {"a", "b", "c"},
		2: {"a"}, // c is newer than the 2nd ready (b): kept
		3: nil,
		9: nil,
	} {
		if got := names(toPrune(snaps, retention.Policy{Last: keep})); !slices.Equal(got, want) {
			t.Errorf("keep %d: prune %v, want %v", keep, got, want)
		}
	}
	tie := []snapv1.VolumeSnapshot{vs("x-2", 1, true, false), vs("x-1", 1, true, false)}
	if got := names(toPrune(tie, retention.Policy{Last: 1})); !slices.Equal(got, []string{"x-1"}) {
		t.Errorf("equal times: prune %v, want the smaller name x-1", got)
	}
	if n := scheduledName("data-db-0", time.Date(2026, 11, 29, 10, 15, 0, 0, time.FixedZone("x", 3600))); n != "data-db-0-20261129091500" {
		t.Errorf("scheduledName = %q", n)
	}
}

// TestToPruneGFS: a daily policy over hourly snapshots keeps the newest of
// each day; a snapshot still uploading is kept when newer than the oldest
// kept one, pruned when older; the empty policy prunes nothing.
func TestToPruneGFS(t *testing.T) {
	var snaps []snapv1.VolumeSnapshot
	for h := range 72 { // three days, hourly, from 2026-11-29T00:00Z
		snaps = append(snaps, vs(fmt.Sprintf("h%02d", h), 60*h, true, false))
	}
	snaps = append(snaps, vs("up-new", 60*71+30, false, false), vs("up-old", 10, false, false))
	got := toPrune(snaps, retention.Policy{Daily: 2})
	keep := map[string]bool{}
	for _, v := range snaps {
		keep[v.Name] = true
	}
	for _, v := range got {
		delete(keep, v.Name)
	}
	want := []string{"h47", "h71", "up-new"} // the newest of 30 Nov and of 1 Dec; the newer upload
	if k := slices.Sorted(maps.Keys(keep)); !slices.Equal(k, want) {
		t.Fatalf("kept %v, want %v", k, want)
	}
	if toPrune(snaps, retention.Policy{}) != nil {
		t.Fatal("the empty policy pruned")
	}
}

// TestSnapshotClaimPrunesOnlyItsClaim: a claim too long for a label value
// is labelled with a hashed value, which a claim may be named after; its
// schedule's pruning still deletes only snapshots of its own claim.
func TestSnapshotClaimPrunesOnlyItsClaim(t *testing.T) {
	long := strings.Repeat("a", 100) + "-0"
	impostor := claimLabel(long) // a valid claim name, and its own label value
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	snap := func(name, pvc string, age time.Duration) *snapv1.VolumeSnapshot {
		v := vs(name, 0, true, false)
		v.Namespace, v.CreationTimestamp = "shop", metav1.NewTime(now.Add(-age))
		v.Labels = map[string]string{scheduleLabel: "default", pvcLabel: impostor}
		v.Spec.Source.PersistentVolumeClaimName = &pvc
		return &v
	}
	cs := fake.NewSimpleClientset(snap("old", long, 2*time.Hour), snap("newer", long, time.Hour), snap("other", impostor, 3*time.Hour))
	cs.PrependReactor("create", "volumesnapshots", func(a k8stesting.Action) (bool, runtime.Object, error) {
		a.(k8stesting.CreateAction).GetObject().(*snapv1.VolumeSnapshot).CreationTimestamp = metav1.NewTime(now) // as the API server would
		return false, nil, nil
	})
	c := cs.SnapshotV1().VolumeSnapshots("shop")
	var log bytes.Buffer
	if err := snapshotClaim(context.Background(), &log, c, long, snapshotFlags{class: "c", schedule: "default", policy: retention.Policy{Last: 1}}, now); err != nil {
		t.Fatal(err)
	}
	list, _ := c.List(context.Background(), metav1.ListOptions{})
	if got := names(list.Items); !slices.Equal(got, []string{scheduledName(long, now), "newer", "other"}) {
		t.Errorf("left %v, want the other claim's snapshot kept and only old pruned:\n%s", got, &log)
	}
	if len(validation.IsValidLabelValue(impostor)) > 0 || !strings.Contains(log.String(), "volumesnapshot/old deleted") {
		t.Errorf("label %q, log %s", impostor, &log)
	}
}
