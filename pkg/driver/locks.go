package driver

import "github.com/chainvol/chainvol/pkg/volume"

// Per-call locks (volume.Manager.TryLock). Each is a try-lock held for the
// whole call: while another call holds its key the call answers Aborted
// naming what is busy (CSI spec "Concurrency": the CO retries), never
// waits. A key has one spelling per kind: the CO's name of what a call
// creates is "KIND:NAME" (volume, snapshot and group names share no
// namespace); an existing lvol is its id (vol-…, snap-…: the id carries
// its kind).
//
// The locks of the services' RPCs, the one place that states them:
//
//	Controller, volumes:   CreateVolume                     volumeNameLock
//	                       DeleteVolume, ControllerExpandVolume  lvolLock(volume id)
//	Controller, snapshots: CreateSnapshot                   snapshotNameLock, then (volume.Manager.TakeSnapshot) the source's id
//	                       DeleteSnapshot                   lvolLock(snapshot id)
//	Background gc:         a retention pass's delete        lvolLock(snapshot id), busy: skipped (retention.go)
//	GroupController:       CreateVolumeGroupSnapshot        groupNameLock, then every source's lvolLock
//	Node:                  NodeStageVolume, NodeUnstageVolume, NodePublishVolume,
//	                       NodeUnpublishVolume, NodeExpandVolume  lvolLock(volume id)

// callLock is the key of one call's lock and what its Aborted names.
type callLock struct{ key, what string }

func volumeNameLock(name string) callLock   { return callLock{"volume:" + name, name} }
func snapshotNameLock(name string) callLock { return callLock{"snapshot:" + name, name} }
func groupNameLock(name string) callLock    { return callLock{"group:" + name, name} }
func lvolLock(id string) callLock           { return callLock{id, id} }

// lock takes l or answers Aborted (errBusy); call unlock when the call ends.
func lock(vols *volume.Manager, l callLock) (unlock func(), err error) {
	if !vols.TryLock(l.key) {
		return nil, errBusy(l.what)
	}
	return func() { vols.Unlock(l.key) }, nil
}
