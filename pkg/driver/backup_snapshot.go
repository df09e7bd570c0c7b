package driver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
	"github.com/chainvol/chainvol/pkg/volume"
)

// createBackupSnapshot takes a reflink snapshot of the volume and uploads it
// in the background as the next link of the volume's chain. Until the
// upload is durable, the answer says ready_to_use false; retries with the
// same name report the same snapshot id, and a failed upload is the error
// of the next call while it is retried under that id (backupStatus).
func (d *snapshotter) createBackupSnapshot(ctx context.Context, req *csi.CreateSnapshotRequest, sp snapshotParams) (*csi.CreateSnapshotResponse, error) {
	if snap, err := d.pool.GetByName(ctx, backend.KindSnapshot, req.GetName()); err == nil {
		if err := takenByGroup(req.GetName(), snap); err != nil {
			return nil, err
		}
		if snap.SourceID != req.GetSourceVolumeId() || !volume.Of(snap).IsBackup() {
			return nil, status.Errorf(codes.AlreadyExists, "snapshot %q exists for another volume or as a local snapshot", req.GetName())
		}
		return d.backupStatus(ctx, snap, req.GetSecrets())
	}
	if resp, err := d.recordedBackup(ctx, req); resp != nil || err != nil {
		return resp, err
	}
	src, err := d.getVolume(ctx, req.GetSourceVolumeId())
	if err != nil {
		return nil, snapshotError("", err)
	}
	repo, err := d.targets.Open(ctx, sp.BackupTarget, req.GetSecrets())
	if err != nil {
		return nil, snapshotError("open backup target", err)
	}
	t, _ := d.targets.Lookup(sp.BackupTarget)
	ref := target.Ref{Target: t.Name, Chain: chainName(src), Backup: s3chain.NewBackupID(time.Now())}
	if ref.Backup, err = d.uniqueBackupID(ctx, repo, ref); err != nil {
		return nil, snapshotError("choose backup id", err)
	}
	if err := checkChainFits(ctx, repo, ref, sp.BlockSize, src.SizeBytes); err != nil {
		return nil, err
	}
	if err := repo.CheckOwner(ctx, ref.Chain, d.vols.Owner()); err != nil {
		return nil, snapshotError("backup", err)
	}
	rec := volume.Record{Hidden: true, BackupRef: volume.BackupID(ref), Upload: volume.Uploading, Unreported: true,
		BlockSize: sp.BlockSize}
	snap, err := d.localSnapshot(ctx, req.GetName(), src.ID, rec)
	if err != nil {
		return nil, err
	}
	// The name's record before the id is first answered. A crash or error
	// before it leaves the lvol, unreported, which the sweep keeps and a
	// retry finds by name; reportedReady writes the record then.
	if err := d.ensureBackupName(snap); err != nil {
		return nil, snapshotError("", err)
	}
	d.startUpload(snap, ref, req.GetSecrets())
	return &csi.CreateSnapshotResponse{Snapshot: backupCSISnapshot(snap, false)}, nil
}

// recordedBackup answers a CreateSnapshot of a backup whose name has no
// lvol (the sweep deleted the base, or the source volume is gone) from the
// name's record (volume.BackupName): the recorded id, ready, while its
// manifest exists on the target, described from it as ListSnapshots does;
// the source volume need not exist. It returns nil, nil when there is no
// record or its backup no longer exists (the stale record is forgotten),
// so a new backup is taken. Errors: AlreadyExists when the name was
// recorded for another source volume; those of lookupBackup (the target
// cannot be read: no second backup is taken while the first may exist).
func (d *snapshotter) recordedBackup(ctx context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	r, ok, err := d.vols.LookupBackupName(req.GetName())
	if err != nil || !ok {
		return nil, snapshotError("", err)
	}
	if r.SourceVolumeID != req.GetSourceVolumeId() {
		return nil, status.Errorf(codes.AlreadyExists, "snapshot %q exists for another volume (%s)", req.GetName(), r.SourceVolumeID)
	}
	s, err := d.lookupBackup(ctx, r.SnapshotID, req.GetSecrets())
	if errors.Is(err, errNoSnapshot) {
		klog.InfoS("recorded backup of a snapshot name no longer exists; taking a new one", "name", r.Name, "backup", r.SnapshotID)
		return nil, snapshotError("", d.vols.ForgetBackup(r.SnapshotID))
	} else if err != nil {
		return nil, err
	}
	return &csi.CreateSnapshotResponse{Snapshot: s}, nil
}

// uniqueBackupID checks that ref.Backup (an s3chain.NewBackupID) names no
// backup of the chain and no pending upload of this node, drawing another
// id if it does. An id is never handed out twice, also not after its
// backup was deleted (s3chain.NewBackupID says why).
func (d *snapshotter) uniqueBackupID(ctx context.Context, repo *s3chain.Repo, ref target.Ref) (string, error) {
	for {
		_, err := repo.Manifest(ctx, ref.Chain, ref.Backup)
		if errors.Is(err, s3chain.ErrBackupNotFound) && !d.backupRefTaken(ctx, volume.BackupID(ref)) {
			return ref.Backup, nil
		} else if err != nil && !errors.Is(err, s3chain.ErrBackupNotFound) {
			return "", err
		}
		ref.Backup = s3chain.NewBackupID(time.Now())
	}
}

// backupRefTaken reports whether a local snapshot already carries id.
func (d *snapshotter) backupRefTaken(ctx context.Context, id string) bool {
	_, err := d.vols.SnapshotOfBackup(ctx, id)
	return err == nil
}

// backupStatus answers a retried CreateSnapshot of a backup: ready once
// uploaded; not ready while uploading (the upload is restarted if no job
// runs, after a driver restart); after a failed upload, the failure, while
// the upload is retried under the same backup id, so that one snapshot name
// keeps one snapshot id forever (CSI spec "CreateSnapshot"); after a
// refused one (volume.Final), the refusal, and no retry.
func (d *snapshotter) backupStatus(ctx context.Context, snap backend.LVol, secrets map[string]string) (*csi.CreateSnapshotResponse, error) {
	ref, err := volume.ParseBackupID(volume.Of(snap).BackupRef)
	if err != nil {
		return nil, snapshotError("backup snapshot", err)
	}
	switch volume.Of(snap).Upload {
	case volume.Uploaded:
		d.vols.ForgetJob(snap.ID)
		d.reportedReady(ctx, snap)
		return &csi.CreateSnapshotResponse{Snapshot: backupCSISnapshot(snap, true)}, nil
	case volume.UploadFailed:
		return nil, d.retryUpload(ctx, snap, ref, secrets)
	case volume.UploadRefused:
		return nil, uploadRefusal(snap)
	}
	j := d.startUpload(snap, ref, secrets)
	if ok, err := j.Finished(); ok && errors.Is(err, context.Canceled) {
		// The driver is stopping (volume.ErrStopping): the record still says
		// uploading, and the CO's retry after the restart resumes it.
		return &csi.CreateSnapshotResponse{Snapshot: backupCSISnapshot(snap, false)}, nil
	}
	if ok, _ := j.Finished(); ok || volume.Wait(ctx, j) {
		if snap, err = d.pool.Get(ctx, snap.ID); err != nil {
			return nil, snapshotError("backup snapshot", err)
		}
		return d.backupStatus(ctx, snap, secrets)
	}
	return &csi.CreateSnapshotResponse{Snapshot: backupCSISnapshot(snap, false)}, nil
}

// retryUpload restarts the failed upload of snap under its backup id and
// returns the failure for the CO to see meanwhile.
func (d *snapshotter) retryUpload(ctx context.Context, snap backend.LVol, ref target.Ref, secrets map[string]string) error {
	d.vols.ForgetJob(snap.ID)
	if _, err := volume.Update(ctx, d.pool, snap.ID, func(r *volume.Record) { r.Upload = volume.Uploading }); err != nil {
		return snapshotError("restart backup upload", err)
	}
	d.startUpload(snap, ref, secrets)
	return uploadFailure(snap)
}

// backupCSISnapshot describes a backup's snapshot lvol as a CSI snapshot.
func backupCSISnapshot(snap backend.LVol, ready bool) *csi.Snapshot {
	s := csiSnapshot(snap, ready)
	s.SnapshotId = volume.Of(snap).BackupRef
	return s
}

// Chain namespaces of volumes whose PVC is unknown. Their first segment holds
// '_', which a Kubernetes namespace (a DNS-1123 label) never does, so no PVC
// chain "NAMESPACE/NAME" can take them, and the two differ from each other.
const (
	volumeChainPrefix       = "_volume/"
	hashedVolumeChainPrefix = "_volume-sha256/"
)

// dnsLabel is a Kubernetes namespace name (RFC 1123 label, Kubernetes API
// conventions "Names"): it never holds '_' or '/'.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// chainName is the chain of a volume, an injective function of its source
// so that no two volumes ever share a chain (issue 12):
//
//   - with PVC metadata from the external-provisioner (a namespace that is a
//     DNS label, a name that fits): "NAMESPACE/NAME", so a re-created
//     StatefulSet finds its own chains; a namespace holds no '/', so the
//     pair is recoverable from the name;
//   - else "_volume/" and the CSI volume name escaped by escapeChainSegment
//     (reversible, so distinct names stay distinct);
//   - else, when that exceeds s3chain.MaxChainNameLen (100 bytes),
//     "_volume-sha256/" and the 64 hex digits of the SHA-256 of the name.
//
// The "_volume" namespaces start with '_', which no namespace can.
func chainName(lv backend.LVol) string {
	if rec := volume.Of(lv); dnsLabel.MatchString(rec.PVCNamespace) && rec.PVCName != "" {
		ns, n := rec.PVCNamespace, rec.PVCName
		if c := ns + "/" + n; s3chain.ValidChainName(c) == nil {
			return c
		}
	}
	if c := volumeChainPrefix + escapeChainSegment(lv.Name); lv.Name != "" && len(c) <= s3chain.MaxChainNameLen {
		return c
	}
	h := sha256.Sum256([]byte(lv.Name))
	return hashedVolumeChainPrefix + hex.EncodeToString(h[:])
}

// escapeChainSegment makes s one chain name segment: letters, digits and
// '-' stay, every other byte becomes "_" and two lower-case hex digits (the
// escape s3chain uses for keys). Distinct inputs give distinct outputs, and
// the result is never "." or "..".
func escapeChainSegment(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "_%02x", c)
		}
	}
	return b.String()
}
