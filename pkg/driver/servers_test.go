package driver

import (
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestServersServeTheirRPCs: every RPC the driver implements is served by
// the server Run registers for its service, not by an Unimplemented stub
// (an empty request is InvalidArgument or answered, never Unimplemented).
func TestServersServeTheirRPCs(t *testing.T) {
	e := newNodeEnv(t)
	var ctl csi.ControllerServer = e.d.controllerService()
	var grp csi.GroupControllerServer = e.d.groups
	var nod csi.NodeServer = e.d.node
	var ids csi.IdentityServer = e.d.identity
	ctx := e.ctx
	calls := map[string]func() error{
		"CreateVolume": func() error { _, err := ctl.CreateVolume(ctx, &csi.CreateVolumeRequest{}); return err },
		"DeleteVolume": func() error { _, err := ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{}); return err },
		"ValidateVolumeCapabilities": func() error {
			_, err := ctl.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{})
			return err
		},
		"ListVolumes": func() error { _, err := ctl.ListVolumes(ctx, &csi.ListVolumesRequest{}); return err },
		"GetCapacity": func() error { _, err := ctl.GetCapacity(ctx, &csi.GetCapacityRequest{}); return err },
		"ControllerGetCapabilities": func() error {
			_, err := ctl.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
			return err
		},
		"CreateSnapshot": func() error { _, err := ctl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{}); return err },
		"DeleteSnapshot": func() error { _, err := ctl.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{}); return err },
		"ListSnapshots":  func() error { _, err := ctl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{}); return err },
		"GetSnapshot":    func() error { _, err := ctl.GetSnapshot(ctx, &csi.GetSnapshotRequest{}); return err },
		"ControllerExpandVolume": func() error {
			_, err := ctl.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{})
			return err
		},
		"ControllerGetVolume": func() error { _, err := ctl.ControllerGetVolume(ctx, &csi.ControllerGetVolumeRequest{}); return err },
		"CreateVolumeGroupSnapshot": func() error {
			_, err := grp.CreateVolumeGroupSnapshot(ctx, &csi.CreateVolumeGroupSnapshotRequest{})
			return err
		},
		"GetVolumeGroupSnapshot": func() error {
			_, err := grp.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{})
			return err
		},
		"DeleteVolumeGroupSnapshot": func() error {
			_, err := grp.DeleteVolumeGroupSnapshot(ctx, &csi.DeleteVolumeGroupSnapshotRequest{})
			return err
		},
		"NodeStageVolume":     func() error { _, err := nod.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{}); return err },
		"NodeUnstageVolume":   func() error { _, err := nod.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{}); return err },
		"NodePublishVolume":   func() error { _, err := nod.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{}); return err },
		"NodeUnpublishVolume": func() error { _, err := nod.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{}); return err },
		"NodeGetVolumeStats":  func() error { _, err := nod.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{}); return err },
		"NodeExpandVolume":    func() error { _, err := nod.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{}); return err },
		"NodeGetCapabilities": func() error { _, err := nod.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{}); return err },
		"NodeGetInfo":         func() error { _, err := nod.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{}); return err },
		"GetPluginInfo":       func() error { _, err := ids.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{}); return err },
		"GetPluginCapabilities": func() error {
			_, err := ids.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
			return err
		},
		"Probe": func() error { _, err := ids.Probe(ctx, &csi.ProbeRequest{}); return err },
	}
	for name, call := range calls {
		if err := call(); status.Code(err) == codes.Unimplemented {
			t.Errorf("%s: %v", name, err)
		}
	}
}
