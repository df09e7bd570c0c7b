package driver

import (
	"context"
	"errors"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
	"github.com/chainvol/chainvol/pkg/volume"
)

// volumeRequest is a validated CreateVolume request.
type volumeRequest struct {
	name   string
	access string // accessBlock or accessMount
	fsType string // from the capability; "" when none was asked
	params volumeParams
	source *csi.VolumeContentSource
	// restore is the backup a restore request names (fromBackup with its
	// templates filled, or a backup snapshot source), target resolved; nil
	// for other requests. Parsed once, before the name's lock.
	restore *target.Ref
}

// CreateVolume allocates an lvol from the local pool: empty, a reflink clone
// of a snapshot or volume, or (fromBackup) a restore of an archived backup
// (CSI spec "CreateVolume"). Retries with the same name and arguments return
// the same volume; other arguments are AlreadyExists.
func (d *controller) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	vr, err := d.validateCreateVolume(req)
	if err != nil {
		return nil, volumeError("", err)
	}
	unlock, err := lock(d.locks, volumeNameLock(req.GetName()))
	if err != nil {
		return nil, volumeError("", err)
	}
	defer unlock()

	if vr.restore != nil {
		return d.restore.createRestoredVolume(ctx, req, vr)
	}
	// The name first: a retry must find its clone even once the source
	// is deleted (CSI spec "CreateVolume"; lifecycle_regress_test.go).
	if existing, err := d.pool.GetByName(ctx, backend.KindVolume, req.GetName()); err == nil {
		srcID := vr.source.GetSnapshot().GetSnapshotId() + vr.source.GetVolume().GetVolumeId()
		if err := sameVolume(existing, vr, srcID, req.GetCapacityRange()); err != nil {
			return nil, volumeError("", err)
		}
		return d.volumeResponse(existing, vr.source), nil
	}
	src, err := d.contentSource(ctx, vr.source, req.GetAccessibilityRequirements())
	if err != nil {
		return nil, volumeError("", err)
	}
	if vr.fsType, err = d.cloneFSType(ctx, vr, src); err != nil {
		return nil, volumeError("", err)
	}
	size, err := sizeFor(req.GetCapacityRange(), max(src.SizeBytes, minFSSize[vr.fsType]))
	if err != nil {
		return nil, volumeError("", err)
	}
	lv, err := d.pool.Create(ctx, backend.CreateOptions{
		Name: req.GetName(), Kind: backend.KindVolume, SizeBytes: size, SourceID: src.ID,
		Labels: volumeRecord(vr, src).Encode(),
	})
	if err != nil {
		return nil, volumeError("create lvol", err)
	}
	if src.ID != "" {
		d.vols.ReflinkMade(src.ID) // a clone shares its source's blocks: more to pay when rewritten
	}
	klog.InfoS("volume created", "volume", lv.ID, "name", lv.Name, "size", lv.SizeBytes, "source", src.ID)
	return d.volumeResponse(lv, vr.source), nil
}

// validateCreateVolume checks name, capabilities, parameters and topology,
// and parses the backup a restore names (restoreRef), all before the lock.
func (d *controller) validateCreateVolume(req *csi.CreateVolumeRequest) (volumeRequest, error) {
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
	if err := d.requireHere(req.GetAccessibilityRequirements(), "volumes"); err != nil {
		return volumeRequest{}, err
	}
	vr := volumeRequest{name: req.GetName(), access: access, fsType: fsType, params: params,
		source: req.GetVolumeContentSource()}
	if params.FromBackup != "" || volume.IsBackupID(vr.source.GetSnapshot().GetSnapshotId()) {
		ref, err := restoreRef(vr)
		if err != nil {
			return volumeRequest{}, err
		}
		t, err := d.targets.Lookup(ref.Target)
		if err != nil {
			return volumeRequest{}, volumeError("backup target", err)
		}
		ref.Target = t.Name
		vr.restore = &ref
	}
	return vr, nil
}

// contentSource resolves a local snapshot or volume source to its lvol; no
// source gives the zero LVol. Unknown sources are NotFound, or
// ResourceExhausted when the CO places the request by topology tr
// (sourceElsewhere: the source is another node's).
func (d *controller) contentSource(ctx context.Context, src *csi.VolumeContentSource, tr *csi.TopologyRequirement) (backend.LVol, error) {
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
	if errors.Is(err, backend.ErrNotFound) {
		if err := d.sourceElsewhere(tr, kind, id); err != nil {
			return backend.LVol{}, volumeError("", err)
		}
	}
	if err == nil && volume.Of(lv).Phase == volume.PhaseHydrating && lv.Kind == kind {
		err = volume.ErrHydrating // a clone of an instant restore waits for its hydration
	}
	if err == nil && (lv.Kind != kind || !volume.Of(lv).Ready()) {
		err = backend.ErrNotFound
	}
	if err != nil {
		return backend.LVol{}, volumeError("content source "+string(kind)+" "+id, err)
	}
	return lv, nil
}

// sameVolume checks that an existing volume satisfies a retried request
// (volume.SameVolume), its refusal an AlreadyExists status.
func sameVolume(lv backend.LVol, vr volumeRequest, srcID string, r *csi.CapacityRange) error {
	return volumeError("", volume.SameVolume(lv, vr.want(srcID, r)))
}

// want is what the request asks of its volume, with content source
// srcID and capacity range r.
func (vr volumeRequest) want(srcID string, r *csi.CapacityRange) volume.Want {
	return volume.Want{Name: vr.name, Required: r.GetRequiredBytes(), Limit: r.GetLimitBytes(), SourceID: srcID,
		Record: volume.Record{ParamsDigest: vr.params.Digest, AccessType: vr.access, FSType: vr.fsType}}
}

// cloneFSType settles the filesystem type of a clone of src (the zero
// LVol for an empty volume) by settleFSType, after the rule for a change
// of access type (volume.CheckModeChange: a Block source mounts only when
// it holds a filesystem). A Block clone of a Block source keeps the
// source's label, as a snapshot does (volume.SnapshotRecord), without
// reading the bytes: no rule can refuse it, and no one trusts a Block
// volume's label (a mount clone, a snapshot's mount clone and a backup
// read the bytes again, sourceFSType), while blkid's exec took longer
// than the clone's reflink (docs/BENCHMARKS.md, session 10).
func (d *controller) cloneFSType(ctx context.Context, vr volumeRequest, src backend.LVol) (string, error) {
	if rec := volume.Of(src); vr.access == volume.AccessBlock && rec.AccessType == volume.AccessBlock {
		return rec.FSType, nil
	}
	fs, err := d.sourceFSType(ctx, src)
	if err != nil {
		return "", err
	}
	what := string(src.Kind) + " " + src.ID
	if err := volume.CheckModeChange(volume.Of(src).AccessType, vr.access, fs, what); err != nil {
		return "", volumeError("", err)
	}
	return settleFSType(vr.fsType, fs, what)
}

// volumeRecord is the record of a new volume. A clone inherits its
// source's restore origin, and vr.fsType is already its source's
// (cloneFSType), so the node never formats over the source's data. src is
// the zero LVol when there is none.
func volumeRecord(vr volumeRequest, src backend.LVol) volume.Record {
	return volume.Record{
		AccessType: vr.access, ParamsDigest: vr.params.Digest, FSType: vr.fsType,
		PVCName: vr.params.PVCName, PVCNamespace: vr.params.PVCNamespace, PVName: vr.params.PVName,
		RestoredFrom: volume.Of(src).RestoredFrom,
	}
}

// Volume context keys of the volumes this driver returns (the same names
// as the labels that record them).
const (
	volumeContextFSType       = "fsType"
	volumeContextRestoredFrom = "restoredFrom"
)

// volumeResponse builds the CreateVolume response of an lvol.
func (d *core) volumeResponse(lv backend.LVol, src *csi.VolumeContentSource) *csi.CreateVolumeResponse {
	return &csi.CreateVolumeResponse{Volume: d.csiVolume(lv, src)}
}

// csiVolume describes an lvol as a CSI Volume, with this node's topology
// and a volume context carrying the filesystem type and restore origin.
func (d *core) csiVolume(lv backend.LVol, src *csi.VolumeContentSource) *csi.Volume {
	rec := volume.Of(lv)
	vc := map[string]string{}
	for k, v := range map[string]string{volumeContextFSType: rec.FSType, volumeContextRestoredFrom: rec.RestoredFrom.String()} {
		if v != "" {
			vc[k] = v
		}
	}
	return &csi.Volume{
		VolumeId: lv.ID, CapacityBytes: lv.SizeBytes, VolumeContext: vc, ContentSource: src,
		AccessibleTopology: d.localTopology(),
	}
}

// DeleteVolume removes a volume's lvol and its backup bases (CSI spec
// "DeleteVolume"; volume.Manager.SweepBases: bases of uploads still running or not yet
// reported go when they are). Unknown or malformed ids are success; a
// volume still attached to a loop device (staged) is FailedPrecondition; a
// restore in progress is cancelled first.
func (d *controller) DeleteVolume(ctx context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	unlock, err := lock(d.locks, lvolLock(id))
	if err != nil {
		return nil, volumeError("", err)
	}
	defer unlock()
	lv, err := d.pool.Get(ctx, id)
	if errors.Is(err, backend.ErrNotFound) || (err == nil && lv.Kind != backend.KindVolume) {
		d.vols.SweepBases(ctx)
		return &csi.DeleteVolumeResponse{}, nil
	} else if err != nil {
		return nil, volumeError("look up volume", err)
	}
	// The name's lock too: a CreateVolume retry of the name (which holds
	// it) must not resume a restore or hydration that this call stops.
	unlockName, err := lock(d.locks, volumeNameLock(lv.Name))
	if err != nil {
		return nil, volumeError("", err)
	}
	defer unlockName()
	// Checked first: a staged instant restore keeps hydrating.
	if err := d.checkNotAttached(ctx, lv.ID); err != nil {
		return nil, volumeError("", err)
	}
	d.vols.CancelRestore(lv)
	if err := d.pool.Delete(ctx, lv.ID); err != nil && !errors.Is(err, backend.ErrNotFound) {
		return nil, volumeError("delete lvol", err)
	}
	d.vols.SweepBases(ctx)
	klog.InfoS("volume deleted", "volume", lv.ID, "name", lv.Name)
	return &csi.DeleteVolumeResponse{}, nil
}

// checkNotAttached refuses to delete an lvol that a loop device still backs,
// directly or through its instant image: the volume is staged on this node
// (CSI spec: FailedPrecondition, in use).
func (d *controller) checkNotAttached(ctx context.Context, id string) error {
	path, err := d.pool.DataPath(id)
	if err != nil {
		return nil
	}
	dev, err := d.deviceOf(ctx, id, path)
	if err != nil {
		return volume.Mark(volume.ErrNodeFailed, "check loop devices of %s: %w", id, err)
	}
	if dev != "" {
		return volume.Mark(volume.ErrInUse, "volume %s is in use: staged on this node as %s; unstage it first", id, dev)
	}
	return nil
}
