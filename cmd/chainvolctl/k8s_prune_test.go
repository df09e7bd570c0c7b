package main

import (
	"slices"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		if got := names(toPrune(snaps, keep)); !slices.Equal(got, want) {
			t.Errorf("keep %d: prune %v, want %v", keep, got, want)
		}
	}
	tie := []snapv1.VolumeSnapshot{vs("x-2", 1, true, false), vs("x-1", 1, true, false)}
	if got := names(toPrune(tie, 1)); !slices.Equal(got, []string{"x-1"}) {
		t.Errorf("equal times: prune %v, want the smaller name x-1", got)
	}
	if n := scheduledName("Data_DB-0", time.Date(2026, 11, 29, 10, 15, 0, 0, time.FixedZone("x", 3600))); n != "data-db-0-20261129091500" {
		t.Errorf("scheduledName = %q", n)
	}
}
