package s3chain

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// Restore writes backup o.BackupID ("latest" allowed) of o.Chain onto
// o.Target and returns its manifest and counters. Before writing anything
// it checks the key, every manifest and hash link back to the full backup,
// the volume digest of the resolved block map, and the target's size. Each
// distinct block object is then fetched once however long the chain, by
// o.Workers goroutines (memory about 2 x workers x block size), checked
// against its digest and written at its offsets; zero blocks become holes
// (or zeroes on devices). With o.Checkpoint the restore is resumable: a
// rerun after a failure or cancellation skips blocks already written.
// Errors: ErrBackupNotFound, ErrChainBroken, ErrWrongKey, ErrInvalidManifest,
// ErrFormatVersion, ErrTargetTooSmall, ErrCorruptBlock (naming the block
// index), context and I/O errors.
func (r *Repo) Restore(ctx context.Context, o RestoreOptions) (*Manifest, RestoreStats, error) {
	start := time.Now()
	cfg, path, blocks, err := r.resolve(ctx, o.Chain, o.BackupID)
	if err != nil {
		return nil, RestoreStats{}, err
	}
	tip := path[0]
	target, isDev, err := openTarget(o.Target, tip.SizeBytes)
	if err != nil {
		return nil, RestoreStats{}, fmt.Errorf("restore backup %q of chain %q: %w", tip.ID, o.Chain, err)
	}
	defer target.Close()
	j := &restoreJob{r: r, o: &o, cfg: cfg, tip: tip, blocks: blocks, target: target, isDev: isDev}
	j.cp = loadCheckpoint(o.Checkpoint, target, checkpointID{Version: checkpointVersion, Chain: o.Chain,
		BackupID: tip.ID, VolumeDigest: tip.VolumeDigest, Target: o.Target, SizeBytes: tip.SizeBytes,
		BlockSize: tip.BlockSize}, int64(len(blocks)))
	err = j.run(ctx)
	st := j.stats(time.Since(start))
	if err != nil {
		// Keep what is on disk for the next attempt.
		if ferr := j.cp.flush(); ferr != nil {
			err = errors.Join(err, ferr)
		}
		return nil, st, fmt.Errorf("restore backup %q of chain %q onto %s: %w", tip.ID, o.Chain, o.Target, err)
	}
	if err := target.Sync(); err != nil {
		return nil, st, fmt.Errorf("sync restore target %s: %w", o.Target, err)
	}
	j.cp.remove()
	return tip, st, nil
}

// openTarget opens the restore target read-write; a missing path is
// created as a sparse file of size bytes. Errors: ErrTargetTooSmall.
func openTarget(path string, size int64) (*os.File, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		if f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			err = f.Truncate(size)
		}
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		return nil, false, fmt.Errorf("open restore target: %w", err)
	}
	have, isDev, err := fileSize(f)
	if err == nil && have < size {
		err = fmt.Errorf("%w: target %s has %d bytes, the backup needs %d", ErrTargetTooSmall, path, have, size)
	}
	if err != nil {
		f.Close()
		return nil, false, err
	}
	return f, isDev, nil
}
