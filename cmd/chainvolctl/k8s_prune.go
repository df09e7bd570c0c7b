package main

import (
	"slices"
	"strings"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"

	"github.com/chainvol/chainvol/pkg/retention"
)

// Labels of the VolumeSnapshots "k8s snapshot" makes.
const (
	// scheduleLabel names the schedule (--schedule) that made a snapshot;
	// only snapshots of the same schedule are pruned.
	scheduleLabel = "chainvol.csi.io/schedule"
	// pvcLabel names the claim a scheduled snapshot was taken of.
	pvcLabel = "chainvol.csi.io/pvc"
)

// toPrune returns the snapshots of one claim and schedule to delete under
// policy p (pkg/retention: restic's forget rules over the ready snapshots'
// creation times, UTC; ties by name, the greater counting as newer).
// Snapshots not ready (an upload in progress, or failed) are kept when
// newer than the oldest ready snapshot the policy keeps, so a failing or
// slow schedule never prunes what the policy would keep; older ones go.
// Snapshots already being deleted are left alone. The empty policy prunes
// nothing.
func toPrune(snaps []snapv1.VolumeSnapshot, p retention.Policy) []snapv1.VolumeSnapshot {
	if p.Empty() {
		return nil
	}
	live := slices.DeleteFunc(slices.Clone(snaps), func(v snapv1.VolumeSnapshot) bool { return v.DeletionTimestamp != nil })
	byName := map[string]snapv1.VolumeSnapshot{}
	var items []retention.Item
	for _, v := range live {
		byName[v.Name] = v
		if v.Status != nil && v.Status.ReadyToUse != nil && *v.Status.ReadyToUse {
			items = append(items, retention.Item{ID: v.Name, Time: v.CreationTimestamp.Time})
		}
	}
	var oldestKept *retention.Item
	var out []snapv1.VolumeSnapshot
	for _, d := range retention.Apply(items, p) {
		if d.Keep {
			oldestKept = &d.Item
		} else {
			out = append(out, byName[d.ID])
		}
	}
	if oldestKept == nil {
		return nil // nothing ready yet: keep everything
	}
	for _, v := range live {
		ready := v.Status != nil && v.Status.ReadyToUse != nil && *v.Status.ReadyToUse
		if !ready && olderThan(v, *oldestKept) {
			out = append(out, v)
		}
	}
	return out
}

// olderThan reports whether v sorts before it (creation time, then name).
func olderThan(v snapv1.VolumeSnapshot, it retention.Item) bool {
	if c := v.CreationTimestamp.Time.Compare(it.Time); c != 0 {
		return c < 0
	}
	return strings.Compare(v.Name, it.ID) < 0
}
