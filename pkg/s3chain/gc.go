package s3chain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// defaultPendingTTL is the age after which an in-progress marker counts as
// left behind by a crashed backup.
const defaultPendingTTL = 24 * time.Hour

// GC deletes block objects that no manifest of their chain references. It
// lists a chain's blocks before its markers and manifests, so a block
// uploaded after the listing is never a candidate, and it skips a chain
// while a backup of it is in progress (a live marker, FORMAT.md §7), since
// that backup may reuse any existing block. Unreferenced blocks younger
// than o.MinAge stay too. Markers older than o.PendingTTL are removed.
// Errors: ErrInvalidChain, ErrWrongKey, ErrInvalidManifest, store errors.
func (r *Repo) GC(ctx context.Context, o GCOptions) (GCStats, error) {
	var st GCStats
	chains := []string{o.Chain}
	if o.Chain == "" {
		var err error
		if chains, err = r.Chains(ctx); err != nil {
			return st, err
		}
	}
	if o.PendingTTL <= 0 {
		o.PendingTTL = defaultPendingTTL
	}
	for _, chain := range chains {
		if err := r.gcChain(ctx, chain, &o, &st); err != nil {
			return st, fmt.Errorf("gc chain %q: %w", chain, err)
		}
	}
	return st, nil
}

func (r *Repo) gcChain(ctx context.Context, chain string, o *GCOptions, st *GCStats) error {
	if _, err := r.chain(ctx, chain, false, 0); err != nil {
		return err
	}
	st.Chains++
	var objs []ObjectInfo
	dir := blockDir(chain)
	err := r.store.List(ctx, dir, func(oi ObjectInfo) error {
		objs = append(objs, oi)
		return nil
	})
	if err != nil {
		return err
	}
	busy, err := r.backupInProgress(ctx, chain, o)
	if err != nil || busy {
		st.SkippedChains++
		return err
	}
	all, err := r.Backups(ctx, chain)
	if errors.Is(err, ErrBackupNotFound) { // a manifest vanished: a delete is running
		st.SkippedChains++
		return nil
	}
	if err != nil {
		return err
	}
	live := knownDigests(all)
	now := time.Now()
	for _, oi := range objs {
		d, err := parseDigest(oi.Key[strings.LastIndexByte(oi.Key, '/')+1:])
		if err != nil || d.isZero() || oi.Key != blockKey(chain, d.String()) {
			continue // not a block object: not ours to delete
		}
		st.Blocks++
		if live[d] {
			continue
		}
		if now.Sub(oi.ModTime) < o.MinAge {
			st.YoungBlocks++
			continue
		}
		if !o.DryRun {
			if err := r.store.Delete(ctx, oi.Key); err != nil {
				return err
			}
		}
		st.DeletedBlocks++
		st.DeletedBytes += oi.Size
	}
	return nil
}

// backupInProgress reports whether chain has a marker younger than
// o.PendingTTL; older markers are removed (unless o.DryRun).
func (r *Repo) backupInProgress(ctx context.Context, chain string, o *GCOptions) (bool, error) {
	busy := false
	var stale []string
	err := r.store.List(ctx, pendingDir(chain), func(oi ObjectInfo) error {
		if time.Since(oi.ModTime) < o.PendingTTL {
			busy = true
		} else {
			stale = append(stale, oi.Key)
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	for _, k := range stale {
		if !o.DryRun {
			if err := r.store.Delete(ctx, k); err != nil {
				return false, err
			}
		}
	}
	return busy, nil
}
