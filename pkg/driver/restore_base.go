package driver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
	"github.com/chainvol/chainvol/pkg/volume"
)

// Local-base restores. A backup's local snapshot holds exactly the image
// the backup lists (the upload read it), so a restore of any backup of the
// same chain can start from a reflink of it and fetch only the blocks
// whose digest differs (s3chain.RestoreOptions.Base): "roll back to last
// night" and a second restore of one backup then cost what changed, not
// the volume. The snapshot's image is recorded in the state directory when
// its upload is done (volume.Manager.ImageRecordPath), so it serves even after its backup
// was deleted from the target; without a record, the backup's manifest
// gives it while the backup exists.

// restoreBase picks the local backup snapshot of ref's chain that shares
// the most bytes with want (nil, nil when none shares any or it is larger
// than size bytes). Records of deleted snapshots are removed on the way.
func (d *restorer) restoreBase(ctx context.Context, repo *s3chain.Repo, ref target.Ref, want *s3chain.Image, size int64) (*backend.LVol, *s3chain.Image) {
	records, _ := filepath.Glob(d.vols.ImageRecordPath("*")) // before the listing: see dropStaleRecords
	snaps, err := d.pool.List(ctx, backend.KindSnapshot)
	if err != nil {
		return nil, nil
	}
	d.dropStaleRecords(records, snaps)
	var best *backend.LVol
	var bestImg *s3chain.Image
	var bestShared int64
	for _, s := range snaps {
		rec := volume.Of(s)
		r, err := volume.ParseBackupID(rec.BackupRef)
		if err != nil || rec.Upload != volume.Uploaded || s.SizeBytes > size || !volume.SameChain(r, ref.Target, ref.Chain) {
			continue
		}
		im := d.snapshotImage(ctx, repo, s.ID, ref.Chain, r.Backup)
		if n := want.SharedBytes(im); n > bestShared {
			best, bestImg, bestShared = &s, im, n
		}
	}
	return best, bestImg
}

// snapshotImage returns the image of backup snapshot id (backup backupID
// of chain): its record, else its manifest (recorded for next time), else nil.
func (d *restorer) snapshotImage(ctx context.Context, repo *s3chain.Repo, id, chain, backupID string) *s3chain.Image {
	if im, err := s3chain.ReadImage(d.vols.ImageRecordPath(id)); err == nil && im.Chain == chain && im.BackupID == backupID {
		return im
	}
	im, err := repo.Image(ctx, chain, backupID)
	if err != nil {
		return nil
	}
	if p := d.vols.ImageRecordPath(id); os.MkdirAll(filepath.Dir(p), 0o700) == nil {
		_ = im.WriteFile(p)
	}
	return im
}

// dropStaleRecords removes the image records (listed before snaps was)
// whose snapshot is gone: a record is written only after its snapshot
// exists, so one missing from a later listing was deleted.
func (d *restorer) dropStaleRecords(records []string, snaps []backend.LVol) {
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

// seedRestore makes the fresh data file of restoring volume lv (of a
// backup of size m.SizeBytes) a reflink copy of the best local base
// (restoreBase) and records that base's image (Manager.RestoreBasePath) once the
// copy is durable. Any failure leaves the restore a full one, which is
// correct whatever the file holds: it writes every data block and zeroes
// every zero block.
func (d *restorer) seedRestore(ctx context.Context, lv backend.LVol, ref target.Ref, repo *s3chain.Repo) {
	if d.opts.NoLocalBase {
		return
	}
	want, err := repo.Image(ctx, ref.Chain, ref.Backup)
	if err != nil {
		return
	}
	base, im := d.restoreBase(ctx, repo, ref, want, lv.SizeBytes)
	if base == nil {
		return
	}
	if err := d.cloneInto(base.ID, lv.ID, want.SizeBytes); err != nil {
		klog.InfoS("restore starts without a local base", "volume", lv.ID, "base", base.ID, "err", err)
		return
	}
	d.vols.SpaceChanged() // the seed shares the base's blocks: more to pay when rewritten
	p := d.vols.RestoreBasePath(lv.ID)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err == nil {
		err = im.WriteFile(p)
	}
	klog.InfoS("restore starts from a local base", "volume", lv.ID, "base", base.ID,
		"baseBackup", im.BackupID, "sharedBytes", want.SharedBytes(im), "err", err)
}

// cloneInto reflinks the data file of lvol src over that of dst (FICLONE:
// the whole file, O(1) in its size), punches whatever the copy holds
// beyond the image's size bytes, and fsyncs. Errors: open, FICLONE
// (EOPNOTSUPP or EXDEV on a pool without reflink), punch and fsync errors.
func (d *restorer) cloneInto(src, dst string, size int64) error {
	sp, err := d.pool.DataPath(src)
	if err != nil {
		return err
	}
	dp, err := d.pool.DataPath(dst)
	if err != nil {
		return err
	}
	in, err := os.Open(sp)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dp, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer out.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(out.Fd()), &st); err != nil {
		return err
	}
	if st.Blocks != 0 {
		return errors.New("the volume's data file is not empty") // a restore already wrote to it
	}
	if err := unix.IoctlFileClone(int(out.Fd()), int(in.Fd())); err != nil {
		return err
	}
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if fi.Size() > size {
		err = unix.Fallocate(int(out.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, size, fi.Size()-size)
		if err != nil {
			return err
		}
	}
	return out.Sync()
}
