package volume

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/backupid"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// admitRestore opens the backup req names (openBackup), holds the request
// against its manifest (size, access and filesystem type, the chain's
// limit) and creates the lvol recorded PhaseRestoring (PhaseHydrating for
// an instant restore) with the concrete
// reference if the pool has room for it (Admit). It returns the opened
// target and the concrete reference too. Errors: those of openBackup,
// restoredSize, checkRestoredType, ChainFull (ClassOutOfRange), and of
// Admit (backend.ErrNoSpace when the pool has no room).
func (m *Manager) admitRestore(ctx context.Context, req RestoreRequest) (*s3chain.Repo, backend.LVol, backupid.Ref, error) {
	repo, man, ref, err := m.openBackup(ctx, req.Ref, req.Secrets)
	if err != nil {
		return nil, backend.LVol{}, ref, err
	}
	size, err := restoredSize(req.Required, req.Limit, man)
	if err != nil {
		return nil, backend.LVol{}, ref, err
	}
	if err := checkRestoredType(req.Record, man); err != nil {
		return nil, backend.LVol{}, ref, err
	}
	if req.OwnChain == ref.Chain && size > s3chain.MaxVolumeSize(man.BlockSize) {
		// Its backups would continue that chain (a claim re-created under
		// the name the chain is of): CSI spec "CreateVolume", the capacity
		// range is not allowed. A restore into any other claim starts the
		// claim's own chain, which its first backup sizes to fit.
		return nil, backend.LVol{}, ref, ChainFull(ClassOutOfRange, ref.Chain, size, man.BlockSize)
	}
	rec := req.Record
	rec.Phase, rec.RestoreRef, rec.RestoredFrom = PhaseRestoring, RefOf(ref), RefOf(ref)
	if req.Instant {
		rec.Phase = PhaseHydrating
	}
	rec.FSType = man.FSType
	lv, err := m.Admit(ctx, backend.CreateOptions{Name: req.Name, Kind: backend.KindVolume, SizeBytes: size}, rec, man.AllocatedBytes)
	if err != nil {
		return nil, lv, ref, fmt.Errorf("restore %s into the pool: %w", ref, err)
	}
	klog.InfoS("restore started", "volume", lv.ID, "name", lv.Name, "backup", ref.String(), "size", size)
	return repo, lv, ref, nil
}

// openBackup opens the target of ref with the request's secrets and loads
// the manifest it names (a hashed chain and a selector resolved). The
// returned ref is concrete. Errors: target.ErrUnknownTarget, the store's,
// s3chain.ErrBackupNotFound, each saying what was being read.
func (m *Manager) openBackup(ctx context.Context, ref backupid.Ref, secrets map[string]string) (*s3chain.Repo, *s3chain.Manifest, backupid.Ref, error) {
	t, err := m.cfg.Targets.Lookup(ref.Target)
	if err != nil {
		return nil, nil, ref, fmt.Errorf("backup target: %w", err)
	}
	ref.Target = t.Name
	repo, err := m.cfg.Targets.Open(ctx, ref.Target, secrets)
	if err != nil {
		return nil, nil, ref, fmt.Errorf("open backup target %s: %w", ref.Target, err)
	}
	if ref, err = ResolveChain(ctx, repo, ref); err != nil {
		return nil, nil, ref, fmt.Errorf("backup %s: %w", ref, err)
	}
	man, err := target.Select(ctx, repo, ref) // an id, latest, before:T or group:ID
	if err != nil {
		return nil, nil, ref, fmt.Errorf("backup %s: %w", ref, err)
	}
	ref.Backup = man.ID
	return repo, man, ref, nil
}

// restoredSize applies the size rules of a restore into a capacity range
// of required and limit bytes: 0 means the backup's size; smaller than the
// backup is ClassOutOfRange; larger is allowed (the node grows the
// filesystem on first stage).
func restoredSize(required, limit int64, man *s3chain.Manifest) (int64, error) {
	if required > 0 && required < man.SizeBytes {
		return 0, Refuse(ClassOutOfRange, "requested %d bytes is smaller than backup %s of %d bytes", required, man.ID, man.SizeBytes)
	}
	if limit > 0 && limit < man.SizeBytes && limit >= required {
		return 0, Refuse(ClassOutOfRange, "capacity_range limit_bytes %d is smaller than backup %s of %d bytes", limit, man.ID, man.SizeBytes)
	}
	if required == 0 {
		required = man.SizeBytes
	}
	return SizeFor(required, limit, man.SizeBytes)
}

// checkRestoredType refuses a request whose capability (rec's access type
// and fsType) cannot serve the bytes the backup holds: the node would
// either fail to mount them or, worse, format over them. Block access
// serves any backup, a Filesystem volume's too (the filesystem's exact
// bytes, what KEP-3314's consumers read changed ranges from; Kubernetes
// gates that volume mode change itself, KEP-3141's
// snapshot.storage.kubernetes.io/allow-volume-mode-change annotation).
// Mount access needs a filesystem (CheckModeChange): a Block volume's
// backup mounts only when a filesystem was found on it (Manifest.FSType),
// of the requested type.
func checkRestoredType(rec Record, man *s3chain.Manifest) error {
	mode, err := s3chain.NormalizeVolumeMode(man.VolumeMode)
	if err != nil {
		return Refuse(ClassDamaged, "backup %s: %v", man.ID, err)
	}
	if rec.AccessType == AccessBlock {
		return nil
	}
	srcAccess := AccessMount
	if mode == s3chain.VolumeModeBlock {
		srcAccess = AccessBlock
	}
	if err := CheckModeChange(srcAccess, rec.AccessType, man.FSType, "backup "+man.ID); err != nil {
		return err
	}
	_, err = SettleFSType(rec.FSType, man.FSType, "backup "+man.ID)
	return err
}
