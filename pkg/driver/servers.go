package driver

import "github.com/container-storage-interface/spec/lib/go/csi"

// The servers of the CSI shell, as aws-ebs-csi-driver splits them: each
// owns the RPCs of one CSI service (or one part of the controller's) and
// their helpers. They are siblings: each holds the shared parts (core,
// which holds no server) and its own declared helpers by name, and no
// server's method calls another server's (siblings_test.go). What two
// servers need is a core helper. All use the receiver name d.

// identity serves the Identity service (identity.go).
type identity struct {
	*core
	csi.UnimplementedIdentityServer
}

// controller serves the Controller service's volume RPCs: create, delete,
// validate, list, expand, capacity, health (controller*.go, list.go,
// capabilities.go, fstype.go, health.go). It answers CreateVolume from a
// backup with its declared restorer (restore.go), a helper, not a server.
type controller struct {
	*core
	restore *restorer
	csi.UnimplementedControllerServer
}

// snapshotter serves the Controller service's snapshot RPCs: local
// snapshots and backups (their stories are volume.Manager.TakeSnapshot and
// Backup), listing and deletion (snapshot*.go, backup_*.go). The lookup and
// deletion of one snapshot, which groups share, and the background gc are
// core's (snapshot_list.go, backup_list.go, gc_background.go, retention.go).
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

func (d *Driver) controllerService() controllerService {
	return controllerService{controller: d.controller, snapshotter: d.snapshotter}
}
