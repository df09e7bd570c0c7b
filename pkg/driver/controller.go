package driver

import (
	"context"
	"errors"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
)

// volumeRequest is a validated CreateVolume request.
type volumeRequest struct {
	name   string
	access string // accessBlock or accessMount
	fsType string // from the capability; "" when none was asked
	params volumeParams
	source *csi.VolumeContentSource
}

// CreateVolume allocates an lvol from the local pool: empty, a reflink clone
// of a snapshot or volume, or (fromBackup) a restore of an archived backup
// (CSI spec "CreateVolume"). Retries with the same name and arguments return
// the same volume; other arguments are AlreadyExists.
func (d *Driver) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	vr, err := d.validateCreateVolume(req)
	if err != nil {
		return nil, err
	}
	if !d.locks.tryLock("name:" + req.GetName()) {
		return nil, errBusy(req.GetName())
	}
	defer d.locks.unlock("name:" + req.GetName())

	if vr.params.FromBackup != "" || isBackupSnapshotSource(vr.source) {
		return d.createRestoredVolume(ctx, req, vr)
	}
	src, err := d.contentSource(ctx, vr.source)
	if err != nil {
		return nil, err
	}
	if vr.fsType, err = d.cloneFSType(ctx, vr.fsType, src); err != nil {
		return nil, err
	}
	size, err := sizeFor(req.GetCapacityRange(), max(src.SizeBytes, minFSSize[vr.fsType]))
	if err != nil {
		return nil, err
	}
	if existing, err := d.pool.GetByName(ctx, backend.KindVolume, req.GetName()); err == nil {
		if err := sameVolume(existing, vr, src.ID, req.GetCapacityRange()); err != nil {
			return nil, err
		}
		return d.volumeResponse(existing, vr.source), nil
	}
	lv, err := d.pool.Create(ctx, backend.CreateOptions{
		Name: req.GetName(), Kind: backend.KindVolume, SizeBytes: size, SourceID: src.ID,
		Labels: volumeLabels(vr, src),
	})
	if err != nil {
		return nil, poolError("create lvol", err)
	}
	klog.InfoS("volume created", "volume", lv.ID, "name", lv.Name, "size", lv.SizeBytes, "source", src.ID)
	return d.volumeResponse(lv, vr.source), nil
}

// validateCreateVolume checks name, capabilities, parameters and topology.
func (d *Driver) validateCreateVolume(req *csi.CreateVolumeRequest) (volumeRequest, error) {
	if req.GetName() == "" {
		return volumeRequest{}, status.Error(codes.InvalidArgument, "name is required")
	}
	access, fsType, err := checkCapabilities(req.GetVolumeCapabilities())
	if err != nil {
		return volumeRequest{}, err
	}
	params, err := parseVolumeParams(req.GetParameters())
	if err != nil {
		return volumeRequest{}, err
	}
	if err := d.checkTopology(req.GetAccessibilityRequirements()); err != nil {
		return volumeRequest{}, err
	}
	return volumeRequest{name: req.GetName(), access: access, fsType: fsType, params: params,
		source: req.GetVolumeContentSource()}, nil
}

// checkTopology rejects requisite topologies that exclude this node: a
// node-local pool can only provision here (CSI spec "TopologyRequirement":
// ResourceExhausted).
func (d *Driver) checkTopology(tr *csi.TopologyRequirement) error {
	if len(tr.GetRequisite()) == 0 {
		return nil
	}
	for _, t := range tr.GetRequisite() {
		if v, ok := t.GetSegments()[TopologyKey]; ok && v == d.opts.NodeID {
			return nil
		}
	}
	return status.Errorf(codes.ResourceExhausted, "requisite topology excludes this node: volumes of %s are local to node %q (%s=%s)",
		d.opts.DriverName, d.opts.NodeID, TopologyKey, d.opts.NodeID)
}

// contentSource resolves a local snapshot or volume source to its lvol; no
// source gives the zero LVol. Unknown sources are NotFound.
func (d *Driver) contentSource(ctx context.Context, src *csi.VolumeContentSource) (backend.LVol, error) {
	var id string
	var kind backend.Kind
	switch {
	case src == nil:
		return backend.LVol{}, nil
	case src.GetSnapshot() != nil:
		id, kind = src.GetSnapshot().GetSnapshotId(), backend.KindSnapshot
	case src.GetVolume() != nil:
		id, kind = src.GetVolume().GetVolumeId(), backend.KindVolume
	default:
		return backend.LVol{}, status.Error(codes.InvalidArgument, "volume_content_source must be a snapshot or a volume")
	}
	lv, err := d.pool.Get(ctx, id)
	if err == nil && (lv.Kind != kind || lv.Labels[labelState] != "") {
		err = backend.ErrNotFound
	}
	if err != nil {
		return backend.LVol{}, poolError("content source "+string(kind)+" "+id, err)
	}
	return lv, nil
}

// sameVolume checks that an existing volume satisfies a retried request.
func sameVolume(lv backend.LVol, vr volumeRequest, srcID string, r *csi.CapacityRange) error {
	switch {
	case !fitsRange(lv.SizeBytes, r):
		return status.Errorf(codes.AlreadyExists, "volume %q exists with size %d bytes, outside the requested capacity range", vr.name, lv.SizeBytes)
	case lv.SourceID != srcID:
		return status.Errorf(codes.AlreadyExists, "volume %q exists with another content source (%q)", vr.name, lv.SourceID)
	case lv.Labels[labelParams] != vr.params.Digest:
		return status.Errorf(codes.AlreadyExists, "volume %q exists with other parameters", vr.name)
	case lv.Labels[labelAccessType] != vr.access:
		return status.Errorf(codes.AlreadyExists, "volume %q exists with access type %s", vr.name, lv.Labels[labelAccessType])
	}
	return nil
}

// cloneFSType settles the filesystem type of a clone of src (the zero
// LVol for an empty volume) by settleFSType.
func (d *Driver) cloneFSType(ctx context.Context, requested string, src backend.LVol) (string, error) {
	fs, err := d.sourceFSType(ctx, src)
	if err != nil {
		return "", err
	}
	return settleFSType(requested, fs, string(src.Kind)+" "+src.ID)
}

// volumeLabels are the labels recorded on a new volume. A clone inherits
// its source's restore origin, and vr.fsType is already its source's
// (cloneFSType), so the node never formats over the source's data. src is
// the zero LVol when there is none.
func volumeLabels(vr volumeRequest, src backend.LVol) map[string]string {
	l := map[string]string{
		labelAccessType: vr.access, labelParams: vr.params.Digest, labelFSType: vr.fsType,
		labelPVCName: vr.params.PVCName, labelPVCNamespace: vr.params.PVCNamespace, labelPVName: vr.params.PVName,
	}
	if from := src.Labels[labelRestoredFrom]; from != "" {
		l[labelRestoredFrom] = from
	}
	return l
}

// volumeResponse builds the CreateVolume response of an lvol.
func (d *Driver) volumeResponse(lv backend.LVol, src *csi.VolumeContentSource) *csi.CreateVolumeResponse {
	return &csi.CreateVolumeResponse{Volume: d.csiVolume(lv, src)}
}

// csiVolume describes an lvol as a CSI Volume, with this node's topology
// and a volume context carrying the filesystem type and restore origin.
func (d *Driver) csiVolume(lv backend.LVol, src *csi.VolumeContentSource) *csi.Volume {
	vc := map[string]string{}
	for _, k := range []string{labelFSType, labelRestoredFrom} {
		if v := lv.Labels[k]; v != "" {
			vc[k] = v
		}
	}
	return &csi.Volume{
		VolumeId: lv.ID, CapacityBytes: lv.SizeBytes, VolumeContext: vc, ContentSource: src,
		AccessibleTopology: []*csi.Topology{d.topology()},
	}
}

// DeleteVolume removes a volume's lvol and its backup bases (CSI spec
// "DeleteVolume"; sweepBases: bases of uploads still running or not yet
// reported go when they are). Unknown or malformed ids are success; a
// volume still attached to a loop device (staged) is FailedPrecondition; a
// restore in progress is cancelled first.
func (d *Driver) DeleteVolume(ctx context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	if !d.locks.tryLock(id) {
		return nil, errBusy(id)
	}
	defer d.locks.unlock(id)
	lv, err := d.pool.Get(ctx, id)
	if errors.Is(err, backend.ErrNotFound) || (err == nil && lv.Kind != backend.KindVolume) {
		d.sweepBases(ctx)
		return &csi.DeleteVolumeResponse{}, nil
	} else if err != nil {
		return nil, poolError("look up volume", err)
	}
	d.cancelRestore(lv)
	if err := d.checkNotAttached(ctx, lv.ID); err != nil {
		return nil, err
	}
	if err := d.pool.Delete(ctx, lv.ID); err != nil && !errors.Is(err, backend.ErrNotFound) {
		return nil, poolError("delete lvol", err)
	}
	d.sweepBases(ctx)
	klog.InfoS("volume deleted", "volume", lv.ID, "name", lv.Name)
	return &csi.DeleteVolumeResponse{}, nil
}

// checkNotAttached refuses to delete an lvol that a loop device still backs:
// the volume is staged on this node (CSI spec: FailedPrecondition, in use).
func (d *Driver) checkNotAttached(ctx context.Context, id string) error {
	path, err := d.pool.DataPath(id)
	if err != nil {
		return nil
	}
	dev, err := d.loops.find(ctx, path)
	if err != nil {
		return status.Errorf(codes.Internal, "check loop devices of %s: %v", id, err)
	}
	if dev != "" {
		return status.Errorf(codes.FailedPrecondition, "volume %s is in use: staged on this node as %s; unstage it first", id, dev)
	}
	return nil
}
