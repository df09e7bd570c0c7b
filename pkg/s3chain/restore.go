package s3chain

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Restore writes backup o.BackupID ("latest" allowed) of o.Chain onto
// o.Target and returns its manifest and counters. Before writing anything
// it checks the key, every manifest and hash link back to the full backup,
// the volume digest of the resolved block map, the target (in use:
// ErrTargetBusy; size) and that every block object it will fetch exists.
// Each distinct block object is then fetched once however long the chain,
// by o.Workers goroutines (memory about 2 x workers x block size), checked
// against its digest and written at its offsets; zero blocks become holes
// (or zeroes on devices). With o.Checkpoint the restore is resumable: a
// rerun after a failure or cancellation onto the same target (see
// targetIdentity) skips the blocks already written once it has read them
// back and matched their digests.
// Errors: ErrBackupNotFound, ErrChainBroken, ErrWrongKey, ErrInvalidManifest,
// ErrFormatVersion, ErrTargetTooSmall, ErrTargetBusy, ErrCorruptBlock
// (naming the block index), store errors (ErrTransient ...), context and
// I/O errors.
func (r *Repo) Restore(ctx context.Context, o RestoreOptions) (*Manifest, RestoreStats, error) {
	start := time.Now()
	cfg, path, blocks, err := r.resolve(ctx, o.Chain, o.BackupID)
	if err != nil {
		return nil, RestoreStats{}, err
	}
	tip := path[0]
	tgt, err := openRestoreTarget(o.Target, tip.SizeBytes)
	if err != nil {
		return nil, RestoreStats{}, fmt.Errorf("restore backup %q of chain %q: %w", tip.ID, o.Chain, err)
	}
	target := tgt.f
	defer target.Close()
	base, err := baseDigests(&o, tip)
	if err != nil {
		return nil, RestoreStats{}, fmt.Errorf("restore backup %q of chain %q: base: %w", tip.ID, o.Chain, err)
	}
	j := &restoreJob{r: r, o: &o, cfg: cfg, tip: tip, blocks: blocks, base: base, target: target, isDev: tgt.isDev}
	if j.direct = openDirect(target); j.direct != nil {
		defer j.direct.Close()
	}
	j.cp = loadCheckpoint(o.Checkpoint, target, checkpointID{Version: checkpointVersion, Chain: o.Chain,
		BackupID: tip.ID, VolumeDigest: tip.VolumeDigest, Target: o.Target, TargetIdentity: tgt.identity,
		SizeBytes: tip.SizeBytes, BlockSize: tip.BlockSize}, int64(len(blocks)), tgt.created)
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
