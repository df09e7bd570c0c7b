package driver

import (
	"context"
	"errors"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
	"github.com/chainvol/chainvol/pkg/volume"
)

// backupSnapshots lists the backups of every target: those of this node
// still uploading (not ready) or kept as a base on the pool, and every
// backup the targets hold that the request's secrets (else the credentials
// file) can read, made by any node or cluster. A target that cannot be
// read is logged and skipped, so it never hides the others.
func (d *snapshotter) backupSnapshots(ctx context.Context, secrets map[string]string) ([]*csi.Snapshot, error) {
	seen := map[string]bool{}
	var out []*csi.Snapshot
	snaps, err := d.pool.List(ctx, backend.KindSnapshot)
	if err != nil {
		return nil, snapshotError("list snapshots", err)
	}
	for _, s := range snaps {
		if rec := volume.Of(s); rec.IsBackup() {
			seen[rec.BackupRef.String()] = true
			out = append(out, backupCSISnapshot(s, rec.Upload == volume.Uploaded))
		}
	}
	for _, t := range d.targets.Targets() {
		found, err := d.targetBackups(ctx, t.Name, secrets)
		if err != nil {
			klog.InfoS("cannot list the backups of a target; skipped", "target", t.Name, "err", err)
			continue
		}
		for _, s := range found {
			if !seen[s.SnapshotId] {
				seen[s.SnapshotId] = true
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// lookupBackup finds one backup by snapshot id (volume.Manager.FindBackup).
// Errors: errNoSnapshot when the id names nothing that exists; a target or
// chain that cannot be read is a status with familyCode's code
// (PermissionDenied, Unavailable, ...), and a chain whose encryption key
// the secrets lack is PermissionDenied.
func (d *core) lookupBackup(ctx context.Context, id string, secrets map[string]string) (*csi.Snapshot, error) {
	b, err := d.vols.FindBackup(ctx, id, secrets)
	if errors.Is(err, errNoSnapshot) {
		return nil, err
	} else if err != nil {
		return nil, snapshotError("", err)
	}
	return backupSnapshot(b), nil
}

// errNoSnapshot: a snapshot id names nothing that exists (NotFound).
var errNoSnapshot = volume.ErrNoBackup

// deleteBackupSnapshot removes a backup from its chain (its blocks merge
// into its child so later backups still restore) and its local snapshot.
// An unknown target, chain or backup is already gone: success. A backup
// under S3 Object Lock retention is refused (FailedPrecondition naming the
// date) before anything local is dropped. A selector id (the volume
// populator's handles) deletes nothing.
func (d *core) deleteBackupSnapshot(ctx context.Context, id string, secrets map[string]string) error {
	ref, err := volume.ParseBackupID(id)
	if err == nil && !ref.Concrete() {
		// "@latest" (like "@before:T", which ParseBackupID refuses) names
		// no backup of its own: deleting the handle deletes nothing, never
		// the backup it picks now.
		klog.InfoS("snapshot id names a selector, not a backup: nothing deleted", "snapshot", id)
		return nil
	}
	if err == nil {
		if err := d.refuseRetained(ctx, id, ref, secrets); err != nil {
			return err
		}
	}
	d.dropLocalBackupSnapshots(ctx, id)
	if err != nil {
		return nil
	}
	repo, err := d.targets.Open(ctx, ref.Target, secrets)
	if errors.Is(err, target.ErrUnknownTarget) {
		klog.InfoS("backup of an unknown target treated as deleted", "snapshot", id)
		return nil
	} else if err != nil {
		return snapshotError("open backup target", err)
	}
	if ref, err = volume.ResolveChain(ctx, repo, ref); errors.Is(err, s3chain.ErrBackupNotFound) {
		return nil
	} else if err != nil {
		return snapshotError("resolve chain", err)
	}
	err = repo.DeleteBackup(ctx, ref.Chain, ref.Backup)
	d.index.invalidate(ref.Target)
	if err != nil && !errors.Is(err, s3chain.ErrBackupNotFound) {
		return snapshotError("delete backup "+ref.String(), err)
	}
	d.gc.schedule(gcKey{ref.Target, ref.Chain}, secrets) // free its blocks (gc_background.go)
	klog.InfoS("backup deleted", "backup", ref.String())
	return nil
}

// refuseRetained returns the FailedPrecondition of a backup still under
// S3 Object Lock retention, so that its local snapshots (the base of the
// next incremental) stay, and records it as an event on the snapshot's
// content (backupRetained); any other trouble is left to the delete itself.
func (d *core) refuseRetained(ctx context.Context, id string, ref target.Ref, secrets map[string]string) error {
	repo, err := d.targets.Open(ctx, ref.Target, secrets)
	if err != nil {
		return nil
	}
	if ref, err = volume.ResolveChain(ctx, repo, ref); err != nil {
		return nil
	}
	if err := repo.Deletable(ctx, ref.Chain, ref.Backup); errors.Is(err, s3chain.ErrRetained) {
		err = snapshotError("delete backup "+ref.String(), err)
		d.events.backupRetained(id, status.Convert(err).Message())
		return err
	}
	return nil
}

// dropLocalBackupSnapshots stops any upload of backup id and deletes its
// local snapshots.
func (d *core) dropLocalBackupSnapshots(ctx context.Context, id string) {
	if err := d.vols.DeleteSnapshotsOfBackup(ctx, id); err != nil {
		klog.ErrorS(err, "delete local snapshot of backup", "backup", id)
	}
}
