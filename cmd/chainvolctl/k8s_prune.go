package main

import (
	"slices"
	"strings"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
)

// Labels of the VolumeSnapshots "k8s snapshot" makes.
const (
	// scheduleLabel names the schedule (--schedule) that made a snapshot;
	// only snapshots of the same schedule are pruned.
	scheduleLabel = "chainvol.csi.io/schedule"
	// pvcLabel names the claim a scheduled snapshot was taken of.
	pvcLabel = "chainvol.csi.io/pvc"
)

// toPrune returns the snapshots of one claim and schedule to delete so that
// the newest keep ready ones stay: newest first (creation time, then
// name), everything older than the keep-th ready snapshot goes. Snapshots
// newer than it stay even when not ready (an upload in progress), so a
// failing or slow schedule never prunes below keep usable backups.
func toPrune(snaps []snapv1.VolumeSnapshot, keep int) []snapv1.VolumeSnapshot {
	s := slices.Clone(snaps)
	slices.SortFunc(s, func(a, b snapv1.VolumeSnapshot) int {
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(b.Name, a.Name)
	})
	ready := 0
	for i, v := range s {
		if v.DeletionTimestamp != nil {
			continue
		}
		if v.Status != nil && v.Status.ReadyToUse != nil && *v.Status.ReadyToUse {
			ready++
		}
		if ready == keep {
			return slices.DeleteFunc(s[i+1:], func(v snapv1.VolumeSnapshot) bool { return v.DeletionTimestamp != nil })
		}
	}
	return nil
}
