package driver

import (
	"context"
	"errors"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// backupSnapshots lists the backups this driver made: those still
// uploading or kept as a base on the pool, and those recorded in the
// targets it can open without a request's secrets (manifests naming this
// node). A target that cannot be read is logged and skipped.
func (d *Driver) backupSnapshots(ctx context.Context) ([]*csi.Snapshot, error) {
	seen := map[string]bool{}
	var out []*csi.Snapshot
	snaps, err := d.pool.List(ctx, backend.KindSnapshot)
	if err != nil {
		return nil, poolError("list snapshots", err)
	}
	for _, s := range snaps {
		if id := s.Labels[labelBackupRef]; id != "" && s.Labels[labelBackupState] != backupFailed {
			seen[id] = true
			out = append(out, backupCSISnapshot(s, s.Labels[labelBackupState] == backupDone))
		}
	}
	for _, t := range d.targets.Targets() {
		found, err := d.targetBackups(ctx, t.Name)
		if err != nil {
			klog.V(2).InfoS("cannot list backups of target", "target", t.Name, "err", err)
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

// targetBackups lists the backups of one target that this node made.
func (d *Driver) targetBackups(ctx context.Context, name string) ([]*csi.Snapshot, error) {
	repo, err := d.targets.Open(ctx, name, nil)
	if err != nil {
		return nil, err
	}
	chains, err := repo.Chains(ctx)
	if err != nil {
		return nil, err
	}
	var out []*csi.Snapshot
	for _, c := range chains {
		ms, err := repo.Backups(ctx, c)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			if m.Node == d.opts.NodeID {
				id := backupSnapshotID(target.Ref{Target: name, Chain: c, Backup: m.ID})
				out = append(out, &csi.Snapshot{SnapshotId: id, SourceVolumeId: m.SourceVolume, SizeBytes: m.SizeBytes,
					CreationTime: timestamppb.New(m.CreatedAt), ReadyToUse: true})
			}
		}
	}
	return out, nil
}

// deleteBackupSnapshot removes a backup from its chain (its blocks merge
// into its child so later backups still restore) and its local snapshot.
// An unknown target, chain or backup is already gone: success.
func (d *Driver) deleteBackupSnapshot(ctx context.Context, id string, secrets map[string]string) error {
	d.dropLocalBackupSnapshots(ctx, id)
	ref, err := parseBackupSnapshotID(id)
	if err != nil {
		return nil
	}
	repo, err := d.targets.Open(ctx, ref.Target, secrets)
	if errors.Is(err, target.ErrUnknownTarget) {
		klog.InfoS("backup of an unknown target treated as deleted", "snapshot", id)
		return nil
	} else if err != nil {
		return chainError("open backup target", err)
	}
	if ref, err = resolveChain(ctx, repo, ref); errors.Is(err, s3chain.ErrBackupNotFound) {
		return nil
	} else if err != nil {
		return chainError("resolve chain", err)
	}
	if err := repo.DeleteBackup(ctx, ref.Chain, ref.Backup); err != nil && !errors.Is(err, s3chain.ErrBackupNotFound) {
		return chainError("delete backup "+ref.String(), err)
	}
	klog.InfoS("backup deleted", "backup", ref.String())
	return nil
}

// dropLocalBackupSnapshots stops any upload of backup id and deletes its
// local snapshots.
func (d *Driver) dropLocalBackupSnapshots(ctx context.Context, id string) {
	snaps, _ := d.pool.List(ctx, backend.KindSnapshot)
	for _, s := range snaps {
		if s.Labels[labelBackupRef] == id {
			d.jobs.stop(s.ID)
			if err := d.pool.Delete(ctx, s.ID); err != nil && !errors.Is(err, backend.ErrNotFound) {
				klog.ErrorS(err, "delete local snapshot of backup", "snapshot", s.ID)
			}
		}
	}
}
