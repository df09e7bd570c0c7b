package volume

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/backupid"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

// Local-base restores. A backup's local snapshot holds exactly the image
// the backup lists (the upload read it), so a restore of any backup of the
// same chain can start from a reflink of it and fetch only the blocks
// whose digest differs (s3chain.RestoreOptions.Base): "roll back to last
// night" and a second restore of one backup then cost what changed, not
// the volume. The snapshot's image is recorded in the state directory when
// its upload is done (ImageRecordPath), so it serves even after its backup
// was deleted from the target; without a record, the backup's manifest
// gives it while the backup exists.

// seedRestore makes the fresh data file of restoring volume lv (of backup
// ref, concrete) a reflink copy of the best local base (restoreBase:
// backend.Pool.CloneInto) and records that base's image (restoreBasePath)
// once the copy is durable. Any failure leaves the restore a full one,
// which is correct whatever the file holds: it writes every data block and
// zeroes every zero block.
func (m *Manager) seedRestore(ctx context.Context, lv backend.LVol, ref backupid.Ref, repo *s3chain.Repo) {
	if m.cfg.NoLocalBase {
		return
	}
	want, err := repo.Image(ctx, ref.Chain, ref.Backup)
	if err != nil {
		return
	}
	base, im := m.restoreBase(ctx, repo, ref, want, lv.SizeBytes)
	if base == nil {
		return
	}
	if err := m.pool.CloneInto(base.ID, lv.ID, want.SizeBytes); err != nil {
		klog.InfoS("restore starts without a local base", "volume", lv.ID, "base", base.ID, "err", err)
		return
	}
	m.SpaceChanged() // the seed shares the base's blocks: more to pay when rewritten
	p := m.restoreBasePath(lv.ID)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err == nil {
		err = im.WriteFile(p)
	}
	klog.InfoS("restore starts from a local base", "volume", lv.ID, "base", base.ID,
		"baseBackup", im.BackupID, "sharedBytes", want.SharedBytes(im), "err", err)
}

// restoreBase picks the local backup snapshot of ref's chain that shares
// the most bytes with want (nil, nil when none shares any or it is larger
// than size bytes). Records of deleted snapshots are removed on the way.
func (m *Manager) restoreBase(ctx context.Context, repo *s3chain.Repo, ref backupid.Ref, want *s3chain.Image, size int64) (*backend.LVol, *s3chain.Image) {
	records, _ := filepath.Glob(m.ImageRecordPath("*")) // before the listing: see dropStaleRecords
	snaps, err := m.pool.List(ctx, backend.KindSnapshot)
	if err != nil {
		return nil, nil
	}
	dropStaleRecords(records, snaps)
	var best *backend.LVol
	var bestImg *s3chain.Image
	var bestShared int64
	for _, s := range snaps {
		rec := Of(s)
		r, err := rec.BackupRef.Ref()
		if err != nil || rec.Upload != Uploaded || s.SizeBytes > size || !SameChain(r, ref.Target, ref.Chain) {
			continue
		}
		im := m.snapshotImage(ctx, repo, s.ID, ref.Chain, r.Backup)
		if n := want.SharedBytes(im); n > bestShared {
			best, bestImg, bestShared = &s, im, n
		}
	}
	return best, bestImg
}

// snapshotImage returns the image of backup snapshot id (backup backupID
// of chain): its record, else its manifest (recorded for next time), else nil.
func (m *Manager) snapshotImage(ctx context.Context, repo *s3chain.Repo, id, chain, backupID string) *s3chain.Image {
	if im, err := s3chain.ReadImage(m.ImageRecordPath(id)); err == nil && im.Chain == chain && im.BackupID == backupID {
		return im
	}
	im, err := repo.Image(ctx, chain, backupID)
	if err != nil {
		return nil
	}
	if p := m.ImageRecordPath(id); os.MkdirAll(filepath.Dir(p), 0o700) == nil {
		_ = im.WriteFile(p)
	}
	return im
}

// dropStaleRecords removes the image records (listed before snaps was)
// whose snapshot is gone: a record is written only after its snapshot
// exists, so one missing from a later listing was deleted.
func dropStaleRecords(records []string, snaps []backend.LVol) {
	have := map[string]bool{}
	for _, s := range snaps {
		have[s.ID] = true
	}
	for _, p := range records {
		if id := strings.TrimSuffix(filepath.Base(p), ".json"); !have[id] {
			_ = os.Remove(p)
		}
	}
}
