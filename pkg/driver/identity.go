package driver

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/chainvol/chainvol/pkg/version"
	"github.com/chainvol/chainvol/pkg/volume"
)

// GetPluginInfo returns the driver name and, as vendor_version, the build's
// version (pkg/version: the link-time git describe tag) (CSI spec
// "GetPluginInfo"). The commit and Go version go into the manifest map.
func (d *identity) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	v := version.Get()
	return &csi.GetPluginInfoResponse{Name: d.opts.DriverName, VendorVersion: v.Version,
		Manifest: map[string]string{"commit": v.Commit, "goVersion": v.GoVersion}}, nil
}

// GetPluginCapabilities advertises the controller, group controller and
// snapshot metadata services, topology constraints on volumes (they are
// node-local) and on snapshots (CSI 1.13, alpha: a local snapshot is
// usable from its node only, a backup from any; accessibility.go) (CSI
// spec "GetPluginCapabilities").
func (d *identity) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	svc := func(t csi.PluginCapability_Service_Type) *csi.PluginCapability {
		return &csi.PluginCapability{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: t}}}
	}
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{
		svc(csi.PluginCapability_Service_CONTROLLER_SERVICE),
		svc(csi.PluginCapability_Service_GROUP_CONTROLLER_SERVICE), // group_snapshot.go
		svc(csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS),
		svc(csi.PluginCapability_Service_SNAPSHOT_METADATA_SERVICE), // snapshot_metadata.go
		svc(csi.PluginCapability_Service_SNAPSHOT_ACCESSIBILITY_CONSTRAINTS),
		{Type: &csi.PluginCapability_VolumeExpansion_{VolumeExpansion: &csi.PluginCapability_VolumeExpansion{
			Type: csi.PluginCapability_VolumeExpansion_ONLINE}}},
	}}, nil
}

// Probe reports ready when the pool answers a capacity query
// (CSI spec "Probe": FailedPrecondition when not ready).
func (d *identity) Probe(ctx context.Context, _ *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	if _, err := d.pool.Capacity(ctx); err != nil {
		return nil, nodeError("", volume.Mark(volume.ErrPoolNotReady, "pool not ready: %w", err))
	}
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}
