package driver

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// validVolumeID reports whether id can name a chainvol volume: an lvol id
// of the pool's one format (backend.IDPattern, at most 25 bytes).
func validVolumeID(id string) bool { return backend.ValidID(id) }

// validSnapshotID reports whether id can name a chainvol snapshot: an lvol
// id, or a backup id "backup:TARGET:CHAIN@BACKUP" of at most 128 bytes
// (CSI spec "Size Limits") that parses, a selector included (the
// populator's handles: volume.ParseBackupSource).
func validSnapshotID(id string) bool {
	if backend.ValidID(id) {
		return true
	}
	if !volume.IsBackupID(id) || len(id) > volume.MaxIDLen {
		return false
	}
	_, err := volume.ParseBackupSource(id)
	return err == nil
}

// checkIDsInterceptor is the one place where the volume and snapshot ids
// of a request are checked, before any handler sees them: an id that
// cannot be a chainvol id ("../../etc", "..", 500 bytes) names nothing that
// exists. Deleting it succeeds (CSI spec "DeleteVolume"/"DeleteSnapshot":
// already gone); every other RPC answers NotFound. A request that lacks
// another field the CSI spec makes REQUIRED goes to its handler, which
// answers InvalidArgument for it first (csi-sanity checks that order), as
// do empty ids. ListSnapshots filters are left to it too (no match is an
// empty list).
func checkIDsInterceptor(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	c := idToCheck(req)
	if !c.complete || c.id == "" || c.valid(c.id) {
		return handler(ctx, req)
	}
	switch req.(type) {
	case *csi.DeleteVolumeRequest:
		return &csi.DeleteVolumeResponse{}, nil
	case *csi.DeleteSnapshotRequest:
		return &csi.DeleteSnapshotResponse{}, nil
	}
	// Every family maps with familyCode; this check stands before them all.
	return nil, toStatus("", notFound(c.what, c.id), familyCode)
}

// idCheck is the id a request names, how to validate it, and whether the
// request carries every other field the CSI spec makes REQUIRED.
type idCheck struct {
	id, what string
	valid    func(string) bool
	complete bool
}

// idToCheck returns the id of req to validate; the zero idCheck for
// requests without one.
func idToCheck(req any) idCheck {
	vol := func(id string, complete bool) idCheck { return idCheck{id, "volume", validVolumeID, complete} }
	switch r := req.(type) {
	case *csi.DeleteVolumeRequest:
		return vol(r.GetVolumeId(), true)
	case *csi.DeleteSnapshotRequest:
		return idCheck{r.GetSnapshotId(), "snapshot", validSnapshotID, true}
	case *csi.GetSnapshotRequest:
		return idCheck{r.GetSnapshotId(), "snapshot", validSnapshotID, true}
	case *csi.CreateSnapshotRequest:
		return idCheck{r.GetSourceVolumeId(), "source volume", validVolumeID, r.GetName() != ""}
	case *csi.CreateVolumeRequest:
		complete := r.GetName() != "" && len(r.GetVolumeCapabilities()) > 0
		if s := r.GetVolumeContentSource().GetSnapshot(); s != nil {
			return idCheck{s.GetSnapshotId(), "content source snapshot", validSnapshotID, complete}
		}
		return idCheck{r.GetVolumeContentSource().GetVolume().GetVolumeId(), "content source volume", validVolumeID, complete}
	case *csi.ValidateVolumeCapabilitiesRequest:
		return vol(r.GetVolumeId(), len(r.GetVolumeCapabilities()) > 0)
	case *csi.ControllerGetVolumeRequest:
		return vol(r.GetVolumeId(), true)
	case *csi.ControllerExpandVolumeRequest:
		return vol(r.GetVolumeId(), r.GetCapacityRange() != nil)
	case *csi.NodeStageVolumeRequest:
		return vol(r.GetVolumeId(), r.GetStagingTargetPath() != "" && r.GetVolumeCapability() != nil)
	case *csi.NodeUnstageVolumeRequest:
		return vol(r.GetVolumeId(), r.GetStagingTargetPath() != "")
	case *csi.NodePublishVolumeRequest:
		// staging_target_path is REQUIRED too: the node has STAGE_UNSTAGE_VOLUME.
		return vol(r.GetVolumeId(), r.GetTargetPath() != "" && r.GetStagingTargetPath() != "" && r.GetVolumeCapability() != nil)
	case *csi.NodeUnpublishVolumeRequest:
		return vol(r.GetVolumeId(), r.GetTargetPath() != "")
	case *csi.NodeGetVolumeStatsRequest:
		return vol(r.GetVolumeId(), r.GetVolumePath() != "")
	case *csi.NodeExpandVolumeRequest:
		return vol(r.GetVolumeId(), r.GetVolumePath() != "")
	}
	return idCheck{}
}

// notFound is the error about a malformed id (volume.ClassNotFound, for
// the caller's mapper); it quotes at most 64 bytes of it.
func notFound(what, id string) error {
	if len(id) > 64 {
		id = id[:64] + "..."
	}
	return volume.Refuse(volume.ClassNotFound, "%s %q does not exist: it is not a chainvol id (vol-/snap- and 20 hex digits, or backup:TARGET:CHAIN@BACKUP)", what, id)
}
