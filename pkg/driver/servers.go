package driver

import "github.com/container-storage-interface/spec/lib/go/csi"

// The servers of the CSI shell, as aws-ebs-csi-driver splits them: each
// owns the RPCs of one CSI service (or one part of the controller's) and
// their helpers, and reaches the shared state and the other servers
// through core. All use the receiver name d.

// identity serves the Identity service (identity.go).
type identity struct {
	*core
	csi.UnimplementedIdentityServer
}

// controller serves the Controller service's volume RPCs: create, delete,
// validate, list, expand, capacity, health (controller*.go, list.go,
// capabilities.go, fstype.go, health.go).
type controller struct {
	*core
	csi.UnimplementedControllerServer
}

// restorer answers CreateVolume from a backup (restore*.go): the
// request's backup parsed, the story (volume.Manager.Restore) called once.
type restorer struct{ *core }

// snapshotter serves the Controller service's snapshot RPCs: local
// snapshots and backups (their stories are volume.Manager.TakeSnapshot and
// Backup), listing, deletion, and the background gc (snapshot*.go,
// backup_*.go, gc_background.go).
type snapshotter struct{ *core }

// groups serves the GroupController service (group_*.go).
type groups struct {
	*core
	csi.UnimplementedGroupControllerServer
}

// node serves the Node service: stage, publish, expand, stats, info,
// health, and freezes (node*.go, freeze.go).
type node struct {
	*core
	csi.UnimplementedNodeServer
}

// controllerService is the Controller service: the volume RPCs of
// controller and the snapshot RPCs of snapshotter. The snapshotter's
// methods are one level shallower than the controller's embedded
// UnimplementedControllerServer, so they, not its stubs, serve.
type controllerService struct {
	*controller
	*snapshotter
}

func (d *core) controllerService() controllerService {
	return controllerService{controller: d.controller, snapshotter: d.snapshotter}
}
