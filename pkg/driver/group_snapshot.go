package driver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// groupCapabilities are advertised by GroupControllerGetCapabilities.
var groupCapabilities = []csi.GroupControllerServiceCapability_RPC_Type{
	csi.GroupControllerServiceCapability_RPC_CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT,
}

// GroupControllerGetCapabilities lists groupCapabilities (CSI spec
// "GroupControllerGetCapabilities").
func (d *groups) GroupControllerGetCapabilities(context.Context, *csi.GroupControllerGetCapabilitiesRequest) (*csi.GroupControllerGetCapabilitiesResponse, error) {
	var caps []*csi.GroupControllerServiceCapability
	for _, c := range groupCapabilities {
		caps = append(caps, &csi.GroupControllerServiceCapability{Type: &csi.GroupControllerServiceCapability_Rpc{
			Rpc: &csi.GroupControllerServiceCapability_RPC{Type: c}}})
	}
	return &csi.GroupControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

// CreateVolumeGroupSnapshot snapshots volumes of this node together: every
// member's filesystem is frozen, all are reflinked, then all thawed, so
// the members hold one moment of the application. With parameter backup
// "true" each member is then archived as the next backup of its own chain,
// the manifests sharing the group id (groupId) and backup time (the ids);
// each member's snapshot id restores like any backup, and
// "fromBackup: CHAIN@group:ID" picks it. The same name returns the same
// group (CSI spec "CreateVolumeGroupSnapshot"). Errors: InvalidArgument
// without name or volumes; NotFound when no member is on this node;
// FailedPrecondition naming the members on other nodes; Aborted while a
// member is busy or frozen by someone else; those of CreateSnapshot.
func (d *groups) CreateVolumeGroupSnapshot(ctx context.Context, req *csi.CreateVolumeGroupSnapshotRequest) (*csi.CreateVolumeGroupSnapshotResponse, error) {
	if req.GetName() == "" || len(req.GetSourceVolumeIds()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "name and source_volume_ids are required")
	}
	sp, err := parseSnapshotParams(req.GetParameters())
	if err != nil {
		return nil, snapshotError("", err)
	}
	unlock, err := lock(d.locks, groupNameLock(req.GetName()))
	if err != nil {
		return nil, snapshotError("", err)
	}
	defer unlock()
	ids := slices.Compact(slices.Sorted(slices.Values(req.GetSourceVolumeIds())))
	if g, err := d.recordedGroup(ctx, req, ids); err != nil {
		return nil, snapshotError("", err)
	} else if g != nil {
		d.groupRetention(ctx, g, sp, req.GetSecrets())
		return &csi.CreateVolumeGroupSnapshotResponse{GroupSnapshot: g}, nil
	}
	members, err := d.groupMembers(ctx, req.GetName(), ids)
	if err != nil {
		return nil, snapshotError("", err)
	}
	if members == nil {
		if members, err = d.takeGroup(ctx, req, sp, ids); err != nil {
			return nil, snapshotError("", err)
		}
	}
	if err := d.recordGroup(req.GetName(), members, sp.Retention); err != nil {
		return nil, snapshotError("", err)
	}
	g, err := d.groupStatus(ctx, members, req.GetSecrets())
	if err != nil {
		return nil, snapshotError("", err)
	}
	d.groupRetention(ctx, g, sp, req.GetSecrets())
	return &csi.CreateVolumeGroupSnapshotResponse{GroupSnapshot: g}, nil
}

// groupMembers returns the member lvols of an existing group called name,
// nil if there is none; the same name over other volumes is AlreadyExists.
func (d *groups) groupMembers(ctx context.Context, name string, ids []string) ([]backend.LVol, error) {
	snaps, err := d.pool.List(ctx, backend.KindSnapshot)
	if err != nil {
		return nil, snapshotError("list snapshots", err)
	}
	var members []backend.LVol
	var sources []string
	for _, s := range snaps {
		if volume.Of(s).GroupName == name {
			members, sources = append(members, s), append(sources, s.SourceID)
		}
	}
	slices.Sort(sources)
	if members != nil && !slices.Equal(sources, ids) {
		return nil, volume.Refuse(volume.ClassExists, "group snapshot %q exists for volumes %v, not %v", name, sources, ids)
	}
	return members, nil
}

// groupSnapshotID is the id of the group called name taken at t:
// "g-TIME-HASH", HASH 20 hex digits of the SHA-256 of name, a valid backup
// id (so it fits a manifest's groupId and a "group:ID" selector; 39
// bytes) and stable across retries once taken (the members record it).
// Groups of two names taken in one second must not share an id (deleting
// one would delete both): 80 bits keep that out of reach even of names
// chosen to collide, where the 48 of earlier versions were not.
func groupSnapshotID(name string, t time.Time) string {
	h := sha256.Sum256([]byte(name))
	return "g-" + t.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(h[:10])
}

// groupStatus describes a group from its member lvols: backups report
// their upload state (restarting a stopped upload like CreateSnapshot).
func (d *groups) groupStatus(ctx context.Context, members []backend.LVol, secrets map[string]string) (*csi.VolumeGroupSnapshot, error) {
	g := &csi.VolumeGroupSnapshot{GroupSnapshotId: volume.Of(members[0]).GroupID, ReadyToUse: true,
		CreationTime: timestamppb.New(members[0].CreatedAt)}
	for _, m := range members {
		s := d.localCSISnapshot(m)
		if volume.Of(m).IsBackup() {
			var err error
			if s, err = d.backupStatus(ctx, m, secrets); err != nil {
				return nil, err
			}
		}
		s.GroupSnapshotId = g.GroupSnapshotId
		g.ReadyToUse = g.ReadyToUse && s.GetReadyToUse()
		g.Snapshots = append(g.Snapshots, s)
	}
	return g, nil
}

// GetVolumeGroupSnapshot reports a group by its members' snapshot ids (the
// CO passes them; CSI spec "GetVolumeGroupSnapshot"), or by the member
// lvols of this node carrying the group id. Errors: InvalidArgument without
// a group id, NotFound when no member is known.
func (d *groups) GetVolumeGroupSnapshot(ctx context.Context, req *csi.GetVolumeGroupSnapshotRequest) (*csi.GetVolumeGroupSnapshotResponse, error) {
	gid := req.GetGroupSnapshotId()
	if gid == "" {
		return nil, status.Error(codes.InvalidArgument, "group_snapshot_id is required")
	}
	ids, err := d.groupSnapshotIDs(ctx, gid, req.GetSnapshotIds())
	if err != nil {
		return nil, snapshotError("", err)
	}
	g := &csi.VolumeGroupSnapshot{GroupSnapshotId: gid, ReadyToUse: true}
	for _, id := range ids {
		s, err := d.findSnapshot(ctx, id, req.GetSecrets())
		if errors.Is(err, errNoSnapshot) {
			return nil, snapshotError("", volume.Refuse(volume.ClassNotFound, "member snapshot %q of group %q not found", id, gid))
		} else if err != nil {
			return nil, snapshotError("", err)
		}
		s.GroupSnapshotId = gid
		g.ReadyToUse = g.ReadyToUse && s.GetReadyToUse()
		if g.CreationTime == nil || s.GetCreationTime().AsTime().Before(g.CreationTime.AsTime()) {
			g.CreationTime = s.GetCreationTime()
		}
		g.Snapshots = append(g.Snapshots, s)
	}
	return &csi.GetVolumeGroupSnapshotResponse{GroupSnapshot: g}, nil
}

// groupSnapshotIDs returns the member snapshot ids of group gid: the
// request's, else those of this node's lvols recording gid. Errors:
// errNoSnapshot when there are none, those of the pool.
func (d *groups) groupSnapshotIDs(ctx context.Context, gid string, given []string) ([]string, error) {
	if len(given) > 0 {
		return given, nil
	}
	snaps, err := d.pool.List(ctx, backend.KindSnapshot)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	var ids []string
	for _, s := range snaps {
		if volume.Of(s).GroupID == gid {
			ids = append(ids, csiSnapshotID(s))
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: group snapshot %q not found on node %s (give its members' snapshot ids to look up backups made elsewhere)", errNoSnapshot, gid, d.opts.NodeID)
	}
	return ids, nil
}

// csiSnapshotID is the snapshot id a member lvol is known by.
func csiSnapshotID(s backend.LVol) string {
	if id := volume.Of(s).BackupRef.String(); id != "" {
		return id
	}
	return s.ID
}

// DeleteVolumeGroupSnapshot deletes every member snapshot (backups leave
// their chains, and the background gc frees their blocks); unknown groups
// and members are already gone (CSI spec "DeleteVolumeGroupSnapshot").
func (d *groups) DeleteVolumeGroupSnapshot(ctx context.Context, req *csi.DeleteVolumeGroupSnapshotRequest) (*csi.DeleteVolumeGroupSnapshotResponse, error) {
	gid := req.GetGroupSnapshotId()
	if gid == "" {
		return nil, status.Error(codes.InvalidArgument, "group_snapshot_id is required")
	}
	ids, err := d.groupSnapshotIDs(ctx, gid, nil)
	if errors.Is(err, errNoSnapshot) {
		ids, err = nil, nil
	} else if err != nil {
		return nil, snapshotError("", err)
	}
	for _, id := range slices.Compact(slices.Sorted(slices.Values(append(ids, req.GetSnapshotIds()...)))) {
		if !validSnapshotID(id) {
			continue // names nothing that exists
		}
		if err := d.deleteSnapshot(ctx, id, req.GetSecrets()); err != nil {
			return nil, snapshotError("", err)
		}
	}
	return &csi.DeleteVolumeGroupSnapshotResponse{}, nil
}

// groupRetention arms the retention pass of each member's chain once the
// group is ready, if its class has a policy (retention.go).
func (d *groups) groupRetention(ctx context.Context, g *csi.VolumeGroupSnapshot, sp snapshotParams, secrets map[string]string) {
	if !g.GetReadyToUse() || sp.Retention == nil {
		return
	}
	for _, s := range g.GetSnapshots() {
		d.scheduleRetention(ctx, s.GetSnapshotId(), secrets)
	}
}
