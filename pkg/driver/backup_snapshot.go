package driver

import (
	"context"
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
)

// createBackupSnapshot takes a reflink snapshot of the volume and uploads it
// in the background as the next link of the volume's chain. Until the
// upload is durable, the answer says ready_to_use false; retries with the
// same name report the same snapshot, and a failed upload is the error of
// the next call (the snapshot is then dropped so a later call starts afresh).
func (d *Driver) createBackupSnapshot(ctx context.Context, req *csi.CreateSnapshotRequest, sp snapshotParams) (*csi.CreateSnapshotResponse, error) {
	if snap, err := d.pool.GetByName(ctx, backend.KindSnapshot, req.GetName()); err == nil {
		if snap.SourceID != req.GetSourceVolumeId() || snap.Labels[labelBackupRef] == "" {
			return nil, status.Errorf(codes.AlreadyExists, "snapshot %q exists for another volume or as a local snapshot", req.GetName())
		}
		return d.backupStatus(ctx, snap, req.GetSecrets())
	}
	src, err := d.getVolume(ctx, req.GetSourceVolumeId())
	if err != nil {
		return nil, err
	}
	repo, err := d.targets.Open(ctx, sp.BackupTarget, req.GetSecrets())
	if err != nil {
		return nil, chainError("open backup target", err)
	}
	t, _ := d.targets.Lookup(sp.BackupTarget)
	ref := target.Ref{Target: t.Name, Chain: chainName(src), Backup: time.Now().UTC().Format("20060102T150405Z")}
	if ref.Backup, err = d.uniqueBackupID(ctx, repo, ref); err != nil {
		return nil, chainError("choose backup id", err)
	}
	snap, err := d.localSnapshot(ctx, req.GetName(), src.ID, map[string]string{
		labelHidden: "true", labelBackupRef: backupSnapshotID(ref), labelBackupState: backupUploading})
	if err != nil {
		return nil, err
	}
	d.startUpload(snap, ref, req.GetSecrets())
	return &csi.CreateSnapshotResponse{Snapshot: backupCSISnapshot(snap, false)}, nil
}

// uniqueBackupID makes ref.Backup unique in the chain and among this node's
// pending uploads, appending "-N" when two backups fall in the same second.
func (d *Driver) uniqueBackupID(ctx context.Context, repo *s3chain.Repo, ref target.Ref) (string, error) {
	base := ref.Backup
	for n := 1; ; n++ {
		_, err := repo.Manifest(ctx, ref.Chain, ref.Backup)
		if errors.Is(err, s3chain.ErrBackupNotFound) && !d.backupRefTaken(ctx, backupSnapshotID(ref)) {
			return ref.Backup, nil
		} else if err != nil && !errors.Is(err, s3chain.ErrBackupNotFound) {
			return "", err
		}
		ref.Backup = fmt.Sprintf("%s-%d", base, n)
	}
}

// backupRefTaken reports whether a local snapshot already carries id.
func (d *Driver) backupRefTaken(ctx context.Context, id string) bool {
	snaps, _ := d.pool.List(ctx, backend.KindSnapshot)
	for _, s := range snaps {
		if s.Labels[labelBackupRef] == id {
			return true
		}
	}
	return false
}

// backupStatus answers a retried CreateSnapshot of a backup: ready once
// uploaded; the upload's error once, if it failed; otherwise not ready, and
// the upload is restarted if no job runs (after a driver restart).
func (d *Driver) backupStatus(ctx context.Context, snap backend.LVol, secrets map[string]string) (*csi.CreateSnapshotResponse, error) {
	switch snap.Labels[labelBackupState] {
	case backupDone:
		d.jobs.forget(snap.ID)
		return &csi.CreateSnapshotResponse{Snapshot: backupCSISnapshot(snap, true)}, nil
	case backupFailed:
		d.jobs.forget(snap.ID)
		if err := d.pool.Delete(ctx, snap.ID); err != nil {
			klog.ErrorS(err, "drop failed backup snapshot", "snapshot", snap.ID)
		}
		return nil, status.Errorf(codes.Internal, "backup upload failed: %s; a retry starts a new upload", snap.Labels[labelBackupError])
	}
	ref, err := parseBackupSnapshotID(snap.Labels[labelBackupRef])
	if err != nil {
		return nil, chainError("backup snapshot", err)
	}
	j := d.startUpload(snap, ref, secrets)
	if ok, _ := j.finished(); ok || wait(ctx, j) {
		if snap, err = d.pool.Get(ctx, snap.ID); err != nil {
			return nil, poolError("backup snapshot", err)
		}
		return d.backupStatus(ctx, snap, secrets)
	}
	return &csi.CreateSnapshotResponse{Snapshot: backupCSISnapshot(snap, false)}, nil
}

// backupCSISnapshot describes a backup's snapshot lvol as a CSI snapshot.
func backupCSISnapshot(snap backend.LVol, ready bool) *csi.Snapshot {
	s := csiSnapshot(snap, ready)
	s.SnapshotId = snap.Labels[labelBackupRef]
	return s
}

var chainUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// chainName is the chain of a volume: its PVC's NAMESPACE/NAME when the
// external-provisioner passed them (so a re-created StatefulSet finds its
// own chains), else the volume's CSI name made safe, else its id.
func chainName(lv backend.LVol) string {
	if ns, n := lv.Labels[labelPVCNamespace], lv.Labels[labelPVCName]; ns != "" && n != "" {
		if c := ns + "/" + n; s3chain.ValidChainName(c) == nil {
			return c
		}
	}
	c := strings.Trim(chainUnsafe.ReplaceAllString(lv.Name, "-"), "-.")
	if len(c) > s3chain.MaxChainNameLen {
		c = c[:s3chain.MaxChainNameLen]
	}
	if s3chain.ValidChainName(c) != nil {
		return lv.ID
	}
	return c
}
