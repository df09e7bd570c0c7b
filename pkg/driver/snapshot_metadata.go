package driver

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// defaultMaxResults is the tuples per message when a request leaves
// max_results 0 (CSI spec: "the plugin will determine an appropriate
// value"): about 20 KiB of protobuf.
const defaultMaxResults = 1024

// snapshotMetadata serves the SnapshotMetadata service (CSI spec
// "Snapshot Metadata Service RPCs", KEP-3314's changed block tracking)
// on the node plugin's socket: which ranges of a snapshot hold data, and
// which changed between two snapshots of one volume or chain. It reads
// only metadata: the FIEMAP extents of local snapshots' data files
// (VARIABLE_LENGTH ranges) and the block lists of backup manifests
// (FIXED_LENGTH ranges of the chain's block size); docs/snapshot-metadata.md.
// It computes a whole answer in the handler's goroutine and starts none,
// so a cancelled stream leaves nothing running.
type snapshotMetadata struct {
	csi.UnimplementedSnapshotMetadataServer
	pool backend.Pool // local snapshots' data files
	// vols finds backups and their images (Manager.BackupImage) and the
	// image records of local snapshots (ImageRecordPath).
	vols *volume.Manager
}

// GetMetadataAllocated streams the ranges of a snapshot that hold data,
// from starting_offset, at most max_results a message (CSI spec
// "GetMetadataAllocated"). Errors: InvalidArgument (no snapshot_id, a
// negative max_results), NotFound (no such snapshot), OutOfRange (a
// starting_offset negative or past the volume), those of reading a
// backup's manifests.
func (s *snapshotMetadata) GetMetadataAllocated(req *csi.GetMetadataAllocatedRequest, stream csi.SnapshotMetadata_GetMetadataAllocatedServer) error {
	if err := checkMetadataRequest(req.GetMaxResults(), req.GetSnapshotId()); err != nil {
		return err
	}
	ctx := stream.Context()
	src, err := s.source(ctx, req.GetSnapshotId(), req.GetSecrets())
	if err != nil {
		return err
	}
	a, err := src.allocated(req.GetStartingOffset())
	if err != nil {
		return metadataError("snapshot "+req.GetSnapshotId(), err)
	}
	return sendPages(ctx, a, req.GetMaxResults(), func(page []*csi.BlockMetadata) error {
		return stream.Send(&csi.GetMetadataAllocatedResponse{BlockMetadataType: a.kind, VolumeCapacityBytes: a.capacity, BlockMetadata: page})
	})
}

// GetMetadataDelta streams the ranges that changed from base_snapshot_id
// to target_snapshot_id, from starting_offset, at most max_results a
// message (CSI spec "GetMetadataDelta"): two local snapshots of one
// volume by their extents, two backups of one chain by their blocks'
// digests, a local snapshot and a backup when the snapshot is a backup's
// base with a recorded image. Errors: InvalidArgument (a missing id, a
// negative max_results, snapshots of two volumes or chains), NotFound
// (either snapshot), FailedPrecondition (volume.ErrNoDelta: no tracking
// compares the pair; copy the target whole), OutOfRange (starting_offset).
func (s *snapshotMetadata) GetMetadataDelta(req *csi.GetMetadataDeltaRequest, stream csi.SnapshotMetadata_GetMetadataDeltaServer) error {
	if err := checkMetadataRequest(req.GetMaxResults(), req.GetBaseSnapshotId(), req.GetTargetSnapshotId()); err != nil {
		return err
	}
	ctx := stream.Context()
	base, err := s.source(ctx, req.GetBaseSnapshotId(), req.GetSecrets())
	if err != nil {
		return err
	}
	tgt, err := s.source(ctx, req.GetTargetSnapshotId(), req.GetSecrets())
	if err != nil {
		return err
	}
	d, err := delta(base, tgt, s.pool.Reflink(), req.GetStartingOffset())
	if err != nil {
		return metadataError("delta from "+req.GetBaseSnapshotId()+" to "+req.GetTargetSnapshotId(), err)
	}
	return sendPages(ctx, d, req.GetMaxResults(), func(page []*csi.BlockMetadata) error {
		return stream.Send(&csi.GetMetadataDeltaResponse{BlockMetadataType: d.kind, VolumeCapacityBytes: d.capacity, BlockMetadata: page})
	})
}

// checkMetadataRequest validates the fields the CSI spec makes REQUIRED
// (the snapshot ids) and max_results (InvalidArgument).
func checkMetadataRequest(maxResults int32, ids ...string) error {
	for _, id := range ids {
		if id == "" {
			return status.Error(codes.InvalidArgument, "snapshot ids are required")
		}
	}
	if maxResults < 0 {
		return status.Errorf(codes.InvalidArgument, "max_results %d is negative", maxResults)
	}
	return nil
}

// answer is the whole answer of one call: its ranges from the request's
// starting_offset, their type and the volume's capacity in bytes.
type answer struct {
	spans    []span
	kind     csi.BlockMetadataType
	capacity int64
}

// sendPages sends the answer's ranges in messages of at most maxResults
// tuples (defaultMaxResults for 0); an answer without ranges is one
// message without tuples, so that the client still learns the type and
// capacity. It stops at the first failed send or when ctx ends.
func sendPages(ctx context.Context, a answer, maxResults int32, send func([]*csi.BlockMetadata) error) error {
	per := int(maxResults)
	if per <= 0 {
		per = defaultMaxResults
	}
	spans := a.spans
	for first := true; first || len(spans) > 0; first = false {
		if err := ctx.Err(); err != nil {
			return metadataError("", err)
		}
		n := min(len(spans), per)
		page := make([]*csi.BlockMetadata, n)
		for i, sp := range spans[:n] {
			page[i] = &csi.BlockMetadata{ByteOffset: sp.off, SizeBytes: sp.n}
		}
		if err := send(page); err != nil {
			return err
		}
		spans = spans[n:]
	}
	return nil
}
