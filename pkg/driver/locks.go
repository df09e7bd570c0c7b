package driver

import "github.com/chainvol/chainvol/internal/trylock"

// Per-call locks (core.locks, an internal/trylock set the driver owns and
// gives its volume.Manager, Config.Locks). Each is a try-lock held for the
// whole call: while another call holds its key the call answers Aborted
// naming what is busy (CSI spec "Concurrency": the CO retries), never
// waits. A key has one spelling per kind: the CO's name of what a call
// creates is "KIND:NAME" (volume, snapshot and group names share no
// namespace); an existing lvol is its id (vol-…, snap-…: the id carries
// its kind).
//
// rpcLocks is the one place that states the locks of the services' RPCs
// (and of the background gc's retention pass): for each, the kinds of
// callLock it takes (a busy one answers Aborted; a retention pass skips
// the backup). locks_test.go checks that every RPC takes exactly these,
// directly or through the helpers it calls. CreateSnapshot's source lock is
// volume.Manager.TakeSnapshot's (pkg/volume), after snapshotNameLock: the
// source's lvol id in the same set, so it excludes what lvolLock does.
var rpcLocks = map[string][]string{
	"Controller.CreateVolume":           {"volumeNameLock"},
	"Controller.DeleteVolume":           {"lvolLock", "volumeNameLock"},
	"Controller.ControllerExpandVolume": {"lvolLock"},
	"Controller.CreateSnapshot":         {"snapshotNameLock"},
	"Controller.DeleteSnapshot":         {"lvolLock"},
	// Every source's lvolLock after the group's name; a delete locks each
	// member as DeleteSnapshot does.
	"GroupController.CreateVolumeGroupSnapshot": {"groupNameLock", "lvolLock"},
	"GroupController.DeleteVolumeGroupSnapshot": {"lvolLock"},
	"Node.NodeStageVolume":                      {"lvolLock"},
	"Node.NodeUnstageVolume":                    {"lvolLock"},
	"Node.NodePublishVolume":                    {"lvolLock"},
	"Node.NodeUnpublishVolume":                  {"lvolLock"},
	"Node.NodeExpandVolume":                     {"lvolLock"},
	// The background gc: a retention pass's delete (retention.go), busy:
	// skipped.
	"gc.collect": {"lvolLock"},
}

// callLock is the key of one call's lock and what its Aborted names.
type callLock struct{ key, what string }

func volumeNameLock(name string) callLock   { return callLock{"volume:" + name, name} }
func snapshotNameLock(name string) callLock { return callLock{"snapshot:" + name, name} }
func groupNameLock(name string) callLock    { return callLock{"group:" + name, name} }
func lvolLock(id string) callLock           { return callLock{id, id} }

// lockVolume opens a node call that names a volume and a path, the
// field of the request that holds it (CSI spec: both REQUIRED): it checks
// both are given (InvalidArgument) and takes the volume's lvolLock
// (Aborted). Call unlock when the call ends.
func (d *node) lockVolume(id, field, path string) (unlock func(), err error) {
	if err := requireArgs("volume_id", id, field, path); err != nil {
		return nil, err
	}
	return lock(d.locks, lvolLock(id))
}

// lock takes l in locks or answers Aborted (errBusy); call unlock when the
// call ends.
func lock(locks *trylock.Set, l callLock) (unlock func(), err error) {
	if !locks.TryLock(l.key) {
		return nil, errBusy(l.what)
	}
	return func() { locks.Unlock(l.key) }, nil
}
