package driver

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/backupid"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/volume"
)

// metaSource is one snapshot the SnapshotMetadata service answers about:
// a local snapshot lvol (its data file's extents; its image too when it is
// a backup's uploaded base) or a backup (its image, from its manifests;
// its extents too when this node keeps its base).
type metaSource struct {
	id   string
	size int64 // the volume's size at the snapshot, bytes
	// local is the snapshot lvol; the zero LVol for a backup.
	local backend.LVol
	path  string // local's data file
	// image is the block list of a backup, or of a local snapshot that
	// is a backup's base; nil when none is known.
	image *s3chain.Image
	ref   backupid.Ref // a backup's target and chain
}

// source resolves a snapshot id. Errors are statuses: NotFound for an id
// that names no visible snapshot (CSI spec "Invalid snapshot_id"), those
// of reading a backup's manifests (metadataError).
func (s *snapshotMetadata) source(ctx context.Context, id string, secrets map[string]string) (metaSource, error) {
	if !validSnapshotID(id) {
		return metaSource{}, metadataError("", notFound("snapshot", id))
	}
	if volume.IsBackupID(id) {
		im, ref, err := s.vols.BackupImage(ctx, id, secrets)
		if err != nil {
			return metaSource{}, metadataError("snapshot "+id, err)
		}
		src := metaSource{id: id, size: im.SizeBytes, image: im, ref: ref}
		// This node's base of the backup, if it still has one: its
		// extents compare with the volume's local snapshots.
		if lv, err := s.vols.SnapshotOfBackup(ctx, id); err == nil && volume.Of(lv).Upload == volume.Uploaded && lv.SizeBytes == im.SizeBytes {
			if path, err := s.pool.DataPath(lv.ID); err == nil {
				src.local, src.path = lv, path
			}
		}
		return src, nil
	}
	lv, err := s.pool.Get(ctx, id)
	if err == nil && (lv.Kind != backend.KindSnapshot || volume.Of(lv).Hidden) {
		err = backend.ErrNotFound
	}
	var path string
	if err == nil {
		path, err = s.pool.DataPath(id)
	}
	if err != nil {
		return metaSource{}, metadataError("snapshot "+id, err)
	}
	src := metaSource{id: id, size: lv.SizeBytes, local: lv, path: path}
	if im, err := s3chain.ReadImage(s.vols.ImageRecordPath(id)); err == nil && im.SizeBytes == lv.SizeBytes {
		src.image = im
	}
	return src, nil
}

// extents returns a local snapshot's extents. Errors: backend.ErrNotFound
// when its data file went away (deleted meanwhile), the FIEMAP ioctl's.
func (m metaSource) extents() ([]backend.Extent, error) {
	exts, err := backend.Extents(m.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: snapshot %s was deleted", backend.ErrNotFound, m.id)
	}
	return exts, err
}

// checkOffset refuses a starting_offset outside [0, size] (CSI spec:
// OutOfRange; size itself answers no ranges).
func checkOffset(start, size int64) error {
	if start < 0 || start > size {
		return volume.Refuse(volume.ClassOutOfRange, "starting_offset %d is outside the volume's %d bytes", start, size)
	}
	return nil
}

// allocated is the answer of GetMetadataAllocated from start: a local
// snapshot's written extents (VARIABLE_LENGTH), a backup's non-zero
// blocks (imageAnswer).
func (m metaSource) allocated(start int64) (answer, error) {
	if err := checkOffset(start, m.size); err != nil {
		return answer{}, err
	}
	if m.image != nil && m.ref.Target != "" { // a backup: its manifest, whatever this node keeps
		return imageAnswer(imageAllocated(m.image), m.image, start), nil
	}
	exts, err := m.extents()
	if err != nil {
		return answer{}, err
	}
	return answer{spans: fromOffset(extentsAllocated(exts, m.size), start, true),
		kind: csi.BlockMetadataType_VARIABLE_LENGTH, capacity: m.size}, nil
}

// imageAnswer is the answer of ranges of image blocks: FIXED_LENGTH at the
// chain's block size, or VARIABLE_LENGTH when the volume's size is not a
// multiple of it (its last block is short, and FIXED_LENGTH tuples must all
// be one size: CSI spec "Metadata Format").
func imageAnswer(spans []span, im *s3chain.Image, start int64) answer {
	kind := csi.BlockMetadataType_FIXED_LENGTH
	if im.SizeBytes%im.BlockSize != 0 {
		kind = csi.BlockMetadataType_VARIABLE_LENGTH
	}
	return answer{spans: fromOffset(spans, start, false), kind: kind, capacity: im.SizeBytes}
}

// delta is the answer of GetMetadataDelta from start, the capacity the
// target's: two images of one chain by digests (two backups), else two
// local snapshots of one volume by extents (a backup counts when this node
// keeps its base), on a pool with reflinks, where a snapshot's unchanged
// extents are the volume's. Errors: ClassInvalid refusals for snapshots
// of two volumes or chains, volume.ErrNoDelta when neither compares the
// pair, those of checkOffset and extents.
func delta(base, tgt metaSource, reflink bool, start int64) (answer, error) {
	if err := checkOffset(start, tgt.size); err != nil {
		return answer{}, err
	}
	switch {
	case base.image != nil && tgt.image != nil:
		return imagesAnswer(base, tgt, start)
	case base.local.ID != "" && tgt.local.ID != "":
		return extentsAnswer(base, tgt, reflink, start)
	}
	missing := base
	if missing.image != nil || missing.local.ID != "" {
		missing = tgt
	}
	return answer{}, fmt.Errorf("%w: snapshot %s is known by no block digests (no backup, nor a backup's base) and the other by no local extents (this node keeps no base of it); copy snapshot %s whole",
		volume.ErrNoDelta, missing.id, tgt.id)
}

// imagesAnswer is the delta of two images of one chain by their digests.
func imagesAnswer(base, tgt metaSource, start int64) (answer, error) {
	if base.image.Chain != tgt.image.Chain || base.image.BlockSize != tgt.image.BlockSize ||
		(base.ref.Target != "" && tgt.ref.Target != "" && base.ref.Target != tgt.ref.Target) {
		return answer{}, volume.Refuse(volume.ClassInvalid, "base snapshot %s is of chain %s, target snapshot %s of chain %s: a delta compares two snapshots of one volume or chain",
			base.id, base.image.Chain, tgt.id, tgt.image.Chain)
	}
	return imageAnswer(imagesDelta(base.image, tgt.image), tgt.image, start), nil
}

// extentsAnswer is the delta of two local snapshots of one volume by
// their extents.
func extentsAnswer(base, tgt metaSource, reflink bool, start int64) (answer, error) {
	if base.local.SourceID != tgt.local.SourceID {
		return answer{}, volume.Refuse(volume.ClassInvalid, "base snapshot %s is of volume %s, target snapshot %s of volume %s: a delta compares two snapshots of one volume",
			base.id, base.local.SourceID, tgt.id, tgt.local.SourceID)
	}
	if !reflink {
		return answer{}, fmt.Errorf("%w: the pool has no reflinks, so its snapshots share no extent; copy snapshot %s whole", volume.ErrNoDelta, tgt.id)
	}
	a, err := base.extents()
	if err != nil {
		return answer{}, err
	}
	b, err := tgt.extents()
	if err != nil {
		return answer{}, err
	}
	return answer{spans: fromOffset(extentsDelta(a, b, tgt.size), start, true),
		kind: csi.BlockMetadataType_VARIABLE_LENGTH, capacity: tgt.size}, nil
}
