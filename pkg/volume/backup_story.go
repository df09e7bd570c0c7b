package volume

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/backupid"
	"github.com/chainvol/chainvol/pkg/retention"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// BackupRequest is a validated CreateSnapshot of a backup (pkg/driver
// validates it and holds the name's lock).
type BackupRequest struct {
	// Name is the CO's snapshot name: the snapshot lvol's name.
	Name string
	// SourceID is the volume backed up.
	SourceID string
	// Target names the backup target ("" for the default).
	Target string
	// BlockSize is the block size asked for the chain in bytes (0: the
	// chain's).
	BlockSize int64
	// Secrets are the call's credentials for the target; never stored.
	Secrets map[string]string
	// Retention is the class's retention policy, recorded with the name
	// (BackupName.Retention) for the driver's background gc; nil: none.
	Retention *retention.Policy
}

// Backup describes one backup snapshot as the stories answer it: its
// local snapshot when this node has one, else the manifest on its target.
type Backup struct {
	ID       string            // the snapshot id, "backup:TARGET:CHAIN@ID"
	Local    backend.LVol      // the local snapshot lvol; zero when none
	Manifest *s3chain.Manifest // the backup's manifest when Local is zero
	Ready    bool              // uploaded: ready to use
}

// ErrNoBackup: a snapshot id names no backup that exists.
var ErrNoBackup = errors.New("no such snapshot")

// Backup is the story of a backup, every step owned here: a snapshot of
// the name answers with its upload (BackupStatus); a name whose lvol the
// sweep deleted answers from its record (recordedBackup); else the target
// is opened once, a fresh backup id chosen (NewBackupRef), the chain's
// block size and limit checked (CheckChainFits) and its owner
// (Repo.CheckOwner), the staged filesystem frozen and reflinked into a
// hidden snapshot lvol recorded Uploading (TakeSnapshot), the name
// recorded before the id is first answered, and the upload started
// (StartUpload) to commit the manifest in the background. Errors:
// ClassExists (the name is another volume's, a local snapshot's or a
// group member's), the refusals of BackupStatus and CheckChainFits,
// s3chain.ErrChainOwned, and the target's and pool's sentinels, each
// saying what was being done.
func (m *Manager) Backup(ctx context.Context, req BackupRequest) (Backup, error) {
	if snap, err := m.pool.GetByName(ctx, backend.KindSnapshot, req.Name); err == nil {
		if err := takenByGroup(req.Name, snap); err != nil {
			return Backup{}, err
		}
		if snap.SourceID != req.SourceID || !Of(snap).IsBackup() {
			return Backup{}, Refuse(ClassExists, "snapshot %q exists for another volume or as a local snapshot", req.Name)
		}
		return m.answerBackup(ctx, snap, req.Secrets)
	}
	if b, ok, err := m.recordedBackup(ctx, req); ok || err != nil {
		return b, err
	}
	src, err := m.readyVolume(ctx, req.SourceID)
	if err != nil {
		return Backup{}, err
	}
	repo, err := m.cfg.Targets.Open(ctx, req.Target, req.Secrets)
	if err != nil {
		return Backup{}, fmt.Errorf("open backup target: %w", err)
	}
	t, _ := m.cfg.Targets.Lookup(req.Target)
	ref, err := m.NewBackupRef(ctx, repo, backupid.Ref{Target: t.Name, Chain: ChainOf(src)}, s3chain.NewBackupID(time.Now()))
	if err != nil {
		return Backup{}, err
	}
	if err := CheckChainFits(ctx, repo, ref, req.BlockSize, src.SizeBytes); err != nil {
		return Backup{}, err
	}
	if err := repo.CheckOwner(ctx, ref.Chain, m.Owner()); err != nil {
		return Backup{}, fmt.Errorf("backup: %w", err)
	}
	rec := Record{Hidden: true, BackupRef: IDOf(ref), Upload: Uploading, Unreported: true, BlockSize: req.BlockSize}
	snap, err := m.TakeSnapshot(ctx, req.Name, src.ID, rec)
	if err != nil {
		return Backup{}, err
	}
	// The name's record before the id is first answered. A crash or error
	// before it leaves the lvol, unreported, which the sweep keeps and a
	// retry finds by name; reportedReady writes the record then.
	if err := m.ensureBackupName(snap, req.Retention); err != nil {
		return Backup{}, err
	}
	m.StartUpload(snap, ref, req.Secrets)
	return Backup{ID: rec.BackupRef.String(), Local: snap}, nil
}

// answerBackup is BackupStatus as a Backup.
func (m *Manager) answerBackup(ctx context.Context, snap backend.LVol, secrets map[string]string) (Backup, error) {
	snap, ready, err := m.BackupStatus(ctx, snap, secrets)
	if err != nil {
		return Backup{}, err
	}
	return Backup{ID: Of(snap).BackupRef.String(), Local: snap, Ready: ready}, nil
}

// recordedBackup answers a backup whose name has no lvol (the sweep
// deleted the base, or the source volume is gone) from the name's record
// (BackupName): the recorded id while its backup exists (FindBackup); the
// source volume need not exist. ok is false when there is no record or its
// backup no longer exists (the stale record is forgotten), so a new backup
// is taken. Errors: ClassExists when the name was recorded for another
// source volume; those of FindBackup (the target cannot be read: no
// second backup is taken while the first may exist).
func (m *Manager) recordedBackup(ctx context.Context, req BackupRequest) (Backup, bool, error) {
	r, ok, err := m.LookupBackupName(req.Name)
	if err != nil || !ok {
		return Backup{}, false, err
	}
	if r.SourceVolumeID != req.SourceID {
		return Backup{}, false, Refuse(ClassExists, "snapshot %q exists for another volume (%s)", req.Name, r.SourceVolumeID)
	}
	b, err := m.FindBackup(ctx, r.SnapshotID, req.Secrets)
	if errors.Is(err, ErrNoBackup) {
		klog.InfoS("recorded backup of a snapshot name no longer exists; taking a new one", "name", r.Name, "backup", r.SnapshotID)
		return Backup{}, false, m.ForgetBackup(r.SnapshotID)
	} else if err != nil {
		return Backup{}, false, err
	}
	return b, true, nil
}

// FindBackup finds one backup by snapshot id: this node's local snapshot
// (an upload not done yet is not ready), else its manifest in the target,
// read with secrets; "latest", "before:T" and "group:ID" name the backup
// target.Select picks now (the volume populator's pre-provisioned
// handles: the csi-snapshotter checks them with ListSnapshots), and the
// Backup's ID is then that backup's concrete id. Errors:
// ErrNoBackup when the id names nothing that exists; ClassDenied when the
// backup exists but the secrets lack its chain's key; the target's and
// pool's sentinels, saying what was being read.
func (m *Manager) FindBackup(ctx context.Context, id string, secrets map[string]string) (Backup, error) {
	if s, err := m.SnapshotOfBackup(ctx, id); err == nil {
		return Backup{ID: id, Local: s, Ready: Of(s).Upload == Uploaded}, nil
	} else if !errors.Is(err, backend.ErrNotFound) {
		return Backup{}, fmt.Errorf("look up the local snapshot of %s: %w", id, err)
	}
	ref, err := ParseBackupSource(id)
	if err != nil {
		return Backup{}, ErrNoBackup
	}
	repo, err := m.cfg.Targets.Open(ctx, ref.Target, secrets)
	if errors.Is(err, target.ErrUnknownTarget) {
		return Backup{}, ErrNoBackup
	} else if err != nil {
		return Backup{}, fmt.Errorf("open backup target %s: %w", ref.Target, err)
	}
	if ref, err = ResolveChain(ctx, repo, ref); err == nil {
		var man *s3chain.Manifest
		if man, err = target.Select(ctx, repo, ref); err == nil { // an id, latest, before:T or group:ID
			if !ref.Concrete() {
				// The id of the backup picked now, not the selector: a
				// snapshot answered by a moving id would change under the
				// csi-snapshotter's record of it.
				ref.Backup = man.ID
				id = BackupID(ref)
			}
			return Backup{ID: id, Manifest: man, Ready: true}, nil
		}
	}
	switch {
	case errors.Is(err, s3chain.ErrBackupNotFound):
		return Backup{}, ErrNoBackup
	case errors.Is(err, s3chain.ErrWrongKey):
		// The backup exists, the caller's secrets cannot read it.
		return Backup{}, Refuse(ClassDenied, "backup %s: %v; give the chain's %s in the request's secrets", ref, err, target.KeyEncryptionKey)
	}
	return Backup{}, fmt.Errorf("backup %s: %w", ref, err)
}

// readyVolume returns the ready volume id. Errors: ErrNotReady (a restore
// fills it), backend.ErrNotFound, saying which volume.
func (m *Manager) readyVolume(ctx context.Context, id string) (backend.LVol, error) {
	lv, err := m.Ready(ctx, backend.KindVolume, id)
	if err != nil {
		return lv, fmt.Errorf("volume %s: %w", id, err)
	}
	return lv, nil
}
