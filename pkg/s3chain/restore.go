package s3chain

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Restore writes backup o.BackupID ("latest" allowed) of o.Chain onto
// o.Destination and returns its manifest and counters. Before writing anything
// it checks the key, every manifest and hash link back to the full backup, the
// volume digest of the resolved block map, the destination (in use:
// ErrDestinationBusy; size) and that every block object it will fetch exists.
// Each distinct block object is then fetched once however long the chain, by
// o.Workers goroutines, checked against its digest and handed to as many
// writers, which write it at its offsets while the fetches go on (block
// buffers at most 2 x workers, each a block plus 4 KiB: restore_writers.go); zero blocks become holes (or
// zeroes on devices). With o.Checkpoint the restore is resumable: a rerun
// after a failure or cancellation onto the same destination (see
// destinationIdentity) skips the blocks already written once it has read them
// back and matched their digests.
// Errors: ErrBackupNotFound, ErrChainBroken, ErrWrongKey, ErrInvalidManifest,
// ErrFormatVersion, ErrDestinationTooSmall, ErrDestinationBusy,
// ErrCorruptBlock (naming the block index), store errors (store.ErrTransient
// ...), context and I/O errors.
func (r *Repo) Restore(ctx context.Context, o RestoreOptions) (*Manifest, RestoreStats, error) {
	start := time.Now()
	cfg, path, blocks, err := r.resolve(ctx, o.Chain, o.BackupID)
	if err != nil {
		return nil, RestoreStats{}, err
	}
	tip := path[0]
	dst, err := openDestination(o.Destination, tip.SizeBytes)
	if err != nil {
		return nil, RestoreStats{}, fmt.Errorf("restore backup %q of chain %q: %w", tip.ID, o.Chain, err)
	}
	dest := dst.f
	defer dest.Close()
	base, err := baseDigests(&o, tip)
	if err != nil {
		return nil, RestoreStats{}, fmt.Errorf("restore backup %q of chain %q: base: %w", tip.ID, o.Chain, err)
	}
	j := &restoreJob{r: r, o: &o, cfg: cfg, tip: tip, blocks: blocks, base: base, dest: dest, isDev: dst.isDev}
	if j.direct = openDirect(dest); j.direct != nil {
		defer j.direct.Close()
	}
	j.cp = loadCheckpoint(o.Checkpoint, dest, checkpointID{Version: checkpointVersion, Chain: o.Chain,
		BackupID: tip.ID, VolumeDigest: tip.VolumeDigest, Destination: o.Destination, DestinationIdentity: dst.identity,
		SizeBytes: tip.SizeBytes, BlockSize: tip.BlockSize}, int64(len(blocks)), dst.created)
	if j.cp.hooks = r.hooks; r.hooks != nil {
		j.cp.interval = j.cp.minInterval()
	}
	err = j.run(ctx)
	st := j.stats(time.Since(start))
	if err != nil {
		// Keep what is on disk for the next attempt.
		if ferr := j.cp.flush(); ferr != nil {
			err = errors.Join(err, ferr)
		}
		return nil, st, fmt.Errorf("restore backup %q of chain %q onto %s: %w", tip.ID, o.Chain, o.Destination, err)
	}
	if err := dest.Sync(); err != nil {
		return nil, st, fmt.Errorf("sync restore destination %s: %w", o.Destination, err)
	}
	j.cp.remove()
	return tip, st, nil
}
