package driver

import (
	"context"
	"errors"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// getVolume returns a ready volume lvol. Errors: InvalidArgument for an
// empty id; backend.ErrNotFound for unknown ids and snapshots,
// volume.ErrNotReady (which wraps it) for volumes still being restored,
// both wrapped with "volume ID" for the caller's family mapper.
func (d *core) getVolume(ctx context.Context, id string) (backend.LVol, error) {
	if id == "" {
		return backend.LVol{}, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	lv, err := d.vols.Ready(ctx, backend.KindVolume, id)
	if err != nil {
		return lv, fmt.Errorf("volume %s: %w", id, err)
	}
	return lv, nil
}

// usableVolume is getVolume that also answers a volume an instant restore
// still hydrates (it exists and serves its pod), for the RPCs that only
// describe a volume. Errors: getVolume's, volume.ErrNotReady while a full
// restore fills it.
func (d *core) usableVolume(ctx context.Context, id string) (backend.LVol, error) {
	if id == "" {
		return backend.LVol{}, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	lv, err := d.vols.Lookup(ctx, backend.KindVolume, id)
	if err == nil && !volume.Of(lv).Usable() {
		err = volume.ErrNotReady
	}
	if err != nil {
		return lv, fmt.Errorf("volume %s: %w", id, err)
	}
	return lv, nil
}

// ValidateVolumeCapabilities confirms capabilities a volume can serve
// (CSI spec "ValidateVolumeCapabilities"): supported modes, and the volume's
// own access type and filesystem type.
func (d *controller) ValidateVolumeCapabilities(ctx context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	lv, err := d.usableVolume(ctx, req.GetVolumeId())
	if err != nil {
		return nil, volumeError("", err)
	}
	access, fsType, err := checkCapabilities(req.GetVolumeCapabilities())
	if err != nil {
		return nil, volumeError("", err)
	}
	if _, err := parseVolumeParams(req.GetParameters()); err != nil {
		return nil, volumeError("", err)
	}
	rec := volume.Of(lv)
	if access != rec.AccessType {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: "volume was created for " + rec.AccessType + " access"}, nil
	}
	if fs := rec.FSType; fsType != "" && fs != "" && fsType != fs {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: "volume holds a " + fs + " filesystem, not " + fsType}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext: req.GetVolumeContext(), VolumeCapabilities: req.GetVolumeCapabilities(), Parameters: req.GetParameters(),
	}}, nil
}

// GetCapacity reports the pool's available bytes less the restore reserve,
// what running restores will still write and what rewriting the data that
// snapshots, backup bases and clones share may still allocate (what
// restore admission accepts: volume.Manager.Free), or 0 for a topology
// that is not this node's (CSI spec "GetCapacity").
func (d *controller) GetCapacity(ctx context.Context, req *csi.GetCapacityRequest) (*csi.GetCapacityResponse, error) {
	if seg := req.GetAccessibleTopology().GetSegments(); len(seg) > 0 && seg[TopologyKey] != d.opts.NodeID {
		return &csi.GetCapacityResponse{}, nil
	}
	if len(req.GetVolumeCapabilities()) > 0 {
		if _, _, err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
			return &csi.GetCapacityResponse{}, nil
		}
	}
	c, err := d.pool.Capacity(ctx)
	if err != nil {
		return nil, volumeError("pool capacity", err)
	}
	free, err := d.vols.Free(ctx) // what restore admission accepts (volume.Manager.Admit)
	if err != nil {
		return nil, volumeError("pool capacity", err)
	}
	return &csi.GetCapacityResponse{
		AvailableCapacity: free,
		MaximumVolumeSize: &wrapperspb.Int64Value{Value: c.TotalBytes},
	}, nil
}

// ControllerGetVolume describes one volume, also while an instant restore
// hydrates it (CSI spec "ControllerGetVolume").
func (d *controller) ControllerGetVolume(ctx context.Context, req *csi.ControllerGetVolumeRequest) (*csi.ControllerGetVolumeResponse, error) {
	lv, err := d.usableVolume(ctx, req.GetVolumeId())
	if err != nil {
		return nil, volumeError("", err)
	}
	return &csi.ControllerGetVolumeResponse{Volume: d.csiVolume(lv, nil), Status: &csi.ControllerGetVolumeResponse_VolumeStatus{}}, nil
}

// ControllerExpandVolume grows a volume's lvol when it lives in this node's
// pool; the node then refreshes the loop device and grows the filesystem
// (CSI spec "ControllerExpandVolume"). The external-resizer runs once per
// cluster, so it may ask a driver on another node: a volume not in the
// local pool is answered with the requested size and node expansion
// required, and NodeExpandVolume, called on the volume's own node, grows
// the lvol there. Growing past what the volume's backup chain holds is
// OutOfRange (checkGrowFits).
func (d *controller) ControllerExpandVolume(ctx context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	if req.GetVolumeId() == "" || req.GetCapacityRange() == nil {
		return nil, status.Error(codes.InvalidArgument, "volume_id and capacity_range are required")
	}
	lv, err := d.getVolume(ctx, req.GetVolumeId())
	if errors.Is(err, backend.ErrNotFound) {
		size, err := sizeFor(req.GetCapacityRange(), 0)
		if err != nil {
			return nil, volumeError("", err)
		}
		return &csi.ControllerExpandVolumeResponse{CapacityBytes: size, NodeExpansionRequired: true}, nil
	} else if err != nil {
		return nil, volumeError("", err)
	}
	unlock, err := lock(d.locks, lvolLock(lv.ID))
	if err != nil {
		return nil, volumeError("", err)
	}
	defer unlock()
	size, err := sizeFor(req.GetCapacityRange(), lv.SizeBytes)
	if err != nil {
		return nil, volumeError("", err)
	}
	if err := d.checkGrowFits(ctx, lv, size, req.GetSecrets()); err != nil {
		return nil, volumeError("", err)
	}
	lv, err = d.pool.Resize(ctx, lv.ID, size)
	if err != nil {
		return nil, volumeError("resize lvol", err)
	}
	return &csi.ControllerExpandVolumeResponse{CapacityBytes: lv.SizeBytes, NodeExpansionRequired: true}, nil
}
