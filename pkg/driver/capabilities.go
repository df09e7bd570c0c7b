package driver

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// controllerCapabilities are advertised by ControllerGetCapabilities.
// Not advertised, deliberately: PUBLISH_UNPUBLISH_VOLUME (volumes are
// node-local; the CSIDriver has attachRequired false), LIST_VOLUMES_PUBLISHED_NODES,
// PUBLISH_READONLY and MODIFY_VOLUME (no mutable parameters), and
// GET_VOLUME_HEALTH / LIST_VOLUME_HEALTH: their consumer, the
// external-health-monitor-controller, runs as one leader-elected instance
// that would ask its own node's plugin about every volume in the cluster,
// and each node's pool knows only its own. Volume health reaches
// Kubernetes through the node service instead (NodeGetVolumeHealth,
// NodeGetStorageHealth, served by health.go and health_node.go; kubelet's
// CSIVolumeHealth).
// health.go still answers the controller RPCs for chainvolctl and tests.
var controllerCapabilities = []csi.ControllerServiceCapability_RPC_Type{
	csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
	csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
	csi.ControllerServiceCapability_RPC_LIST_VOLUMES,
	csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
	csi.ControllerServiceCapability_RPC_GET_CAPACITY,
	csi.ControllerServiceCapability_RPC_CLONE_VOLUME,
	csi.ControllerServiceCapability_RPC_EXPAND_VOLUME,
	csi.ControllerServiceCapability_RPC_GET_VOLUME,
	csi.ControllerServiceCapability_RPC_GET_SNAPSHOT,
	csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
}

// supportedModes are the access modes a node-local volume can honour.
var supportedModes = map[csi.VolumeCapability_AccessMode_Mode]bool{
	csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER:        true,
	csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY:   true,
	csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER: true,
	csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER:  true,
}

// ControllerGetCapabilities lists controllerCapabilities (CSI spec "ControllerGetCapabilities").
func (d *controller) ControllerGetCapabilities(_ context.Context, _ *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	caps := make([]*csi.ControllerServiceCapability, 0, len(controllerCapabilities))
	for _, c := range controllerCapabilities {
		caps = append(caps, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{
			Rpc: &csi.ControllerServiceCapability_RPC{Type: c}}})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

// checkCapabilities validates a request's volume capabilities and returns
// the access type they share ("block" or "mount") and the requested fsType
// ("" if none). Errors are InvalidArgument naming the offending capability.
func checkCapabilities(caps []*csi.VolumeCapability) (access, fsType string, err error) {
	if len(caps) == 0 {
		return "", "", status.Error(codes.InvalidArgument, "volume_capabilities are required")
	}
	for i, c := range caps {
		a, fs, err := checkCapability(c)
		if err != nil {
			return "", "", status.Errorf(codes.InvalidArgument, "volume_capabilities[%d]: %s", i, err)
		}
		if access != "" && a != access {
			return "", "", status.Error(codes.InvalidArgument, "volume_capabilities mix block and mount access types")
		}
		if fsType != "" && fs != "" && fs != fsType {
			return "", "", status.Errorf(codes.InvalidArgument, "volume_capabilities ask for two fsTypes, %q and %q", fsType, fs)
		}
		access = a
		if fs != "" {
			fsType = fs
		}
	}
	return access, fsType, nil
}

// checkCapability validates one capability; the error is a plain message.
func checkCapability(c *csi.VolumeCapability) (access, fsType string, err error) {
	if c == nil {
		return "", "", fmt.Errorf("capability is empty")
	}
	mode := c.GetAccessMode().GetMode()
	if !supportedModes[mode] {
		return "", "", fmt.Errorf("access mode %s is not supported: chainvol volumes are node-local (use a SINGLE_NODE_* mode)", mode)
	}
	switch {
	case c.GetBlock() != nil:
		return accessBlock, "", nil
	case c.GetMount() != nil:
		fs := c.GetMount().GetFsType()
		if fs != "" && !supportedFS[fs] {
			return "", "", fmt.Errorf("fsType %q is not supported (use ext4, ext3 or xfs)", fs)
		}
		return accessMount, fs, nil
	}
	return "", "", fmt.Errorf("access type must be block or mount")
}

// supportedFS are the filesystems the node can format, mount and grow.
var supportedFS = map[string]bool{"ext4": true, "ext3": true, "xfs": true}
