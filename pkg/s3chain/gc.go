package s3chain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// GC deletes block objects that no manifest of their chain references,
// safely against any number of concurrent backups, deletes, restores and
// other GCs (FORMAT.md §7). Per chain it writes a gc lock and then lists
// the chain's locks: a live writer lock (a backup in progress, which may
// reuse any stored block) makes it skip the chain; a writer that starts
// later sees the gc lock and waits. Writer locks not refreshed within the
// lease TTL are abandoned and deleted (their backup fails rather than
// commit). Only then are blocks and manifests listed, and unreferenced
// blocks older than o.MinAge deleted while the gc lease holds. A chain
// with an unreadable manifest is left alone (its references are unknown).
// Errors: ErrInvalidChain, ErrWrongKey, ErrInvalidManifest, ErrLeaseLost,
// store errors.
func (r *Repo) GC(ctx context.Context, o GCOptions) (GCStats, error) {
	var st GCStats
	chains := []string{o.Chain}
	if o.Chain == "" {
		var err error
		if chains, err = r.Chains(ctx); err != nil {
			return st, err
		}
	}
	if o.MinAge < 0 {
		o.MinAge = 0
	}
	for _, chain := range chains {
		err := r.gcChain(ctx, chain, &o, &st)
		if errors.Is(err, ErrWrongKey) && o.Chain == "" {
			// Another key's chain (one target may hold several): not ours
			// to judge, and no reason to leave the others uncollected.
			st.OtherKeyChains++
			continue
		}
		if err != nil {
			return st, fmt.Errorf("gc chain %q: %w", chain, err)
		}
	}
	if err := r.sweepTemps(ctx, o, &st); err != nil {
		return st, err
	}
	if o.Chain != "" || o.DryRun {
		return st, nil
	}
	return st, r.dropOrphanLocks(ctx, chains)
}

// dropOrphanLocks deletes the locks, abandoned for more than a lease TTL,
// of chains that have no config any more (a gc dropped the emptied chain;
// a holder killed then could not delete its lock).
func (r *Repo) dropOrphanLocks(ctx context.Context, chains []string) error {
	known := map[string]bool{}
	for _, c := range chains {
		known[pendingDir(c)] = true
	}
	now := time.Now()
	return r.store.List(ctx, pendingPrefix, func(oi store.ObjectInfo) error {
		dir := oi.Key[:strings.LastIndexByte(oi.Key, '/')+1]
		if known[dir] || now.Sub(oi.ModTime) < 2*r.lease {
			return nil
		}
		return r.store.Delete(ctx, oi.Key)
	})
}

func (r *Repo) gcChain(ctx context.Context, chain string, o *GCOptions, st *GCStats) error {
	if _, err := r.chain(ctx, chain, false, 0); err != nil {
		return err
	}
	st.Chains++
	l, lctx, err := r.hold(ctx, chain, kindGC)
	if err != nil {
		return err
	}
	defer l.release(ctx)
	if busy, err := r.clearLocks(lctx, l, o.DryRun); err != nil || busy {
		st.SkippedChains++
		return err
	}
	var objs []store.ObjectInfo
	if err := r.store.List(lctx, blockDir(chain), func(oi store.ObjectInfo) error {
		objs = append(objs, oi)
		return nil
	}); err != nil {
		return err
	}
	live, err := r.referenced(lctx, chain)
	if err != nil {
		return err
	}
	before := st.DeletedBlocks
	if err := r.sweep(lctx, l, chain, objs, live, o, st); err != nil {
		return err
	}
	if len(live) == 0 && st.DeletedBlocks-before == len(objs) && !o.DryRun {
		return r.dropEmptyChain(lctx, l, chain)
	}
	return nil
}

// dropEmptyChain deletes the config of a chain left without any manifest
// or block, so it is no longer listed. A backup that opened the config
// before cannot commit with it: every commit checks its config is still
// stored (checkConfig).
func (r *Repo) dropEmptyChain(ctx context.Context, l *lease, chain string) error {
	ids, marked, err := r.backupIDs(ctx, chain)
	if err != nil || len(ids) > 0 || len(marked) > 0 {
		return err
	}
	if err := l.valid(); err != nil {
		return err
	}
	if err := r.store.Delete(ctx, configKey(chain)); err != nil {
		return fmt.Errorf("delete config of empty chain %q: %w", chain, err)
	}
	r.mu.Lock()
	delete(r.configs, chain)
	r.mu.Unlock()
	return nil
}

// clearLocks reports whether a live writer holds the chain, as seen from
// gc lock l; abandoned locks of any kind are deleted (unless dryRun).
// Other live gc locks are no obstacle: gcs only delete unreferenced blocks.
func (r *Repo) clearLocks(ctx context.Context, l *lease, dryRun bool) (bool, error) {
	others, err := r.locks(ctx, l.chain, l.key)
	if err != nil {
		return false, err
	}
	for _, o := range others {
		if o.kind == kindWriter && r.live(o, l.server) {
			return true, nil
		}
	}
	for _, o := range others { // abandoned: their holders' leases have lapsed
		if !r.live(o, l.server) && !dryRun {
			if err := r.store.Delete(ctx, o.Key); err != nil {
				return false, err
			}
		}
	}
	return false, nil
}

// referenced returns the digests every manifest of chain lists (deleted
// version-1 ones kept for their dependents too), read after the chain's
// locks were checked, and purges tombstones nothing depends on. A manifest
// deleted meanwhile is skipped; any other failure stops the gc of the chain.
func (r *Repo) referenced(ctx context.Context, chain string) (map[digest]bool, error) {
	all, gone, err := r.allManifests(ctx, chain)
	if err != nil {
		return nil, err
	}
	if all, err = r.purgeTombstones(ctx, chain, all, gone); err != nil {
		return nil, err
	}
	return knownDigests(all), nil
}

// sweep deletes the unreferenced block objects among objs older than
// o.MinAge (by the store's clock), checking the gc lease before each.
func (r *Repo) sweep(ctx context.Context, l *lease, chain string, objs []store.ObjectInfo, live map[digest]bool, o *GCOptions, st *GCStats) error {
	for _, oi := range objs {
		d, err := parseDigest(oi.Key[strings.LastIndexByte(oi.Key, '/')+1:])
		if err != nil || d.isZero() || oi.Key != blockKey(chain, d.String()) {
			continue // not a block object: not ours to delete
		}
		st.Blocks++
		if live[d] {
			continue
		}
		if l.server.Sub(oi.ModTime) < o.MinAge {
			st.YoungBlocks++
			continue
		}
		if !o.DryRun {
			if err := l.valid(); err != nil {
				return err
			}
			dctx, cancel := l.bound(ctx)
			err := r.store.Delete(dctx, oi.Key)
			cancel()
			if err != nil {
				return err
			}
		}
		st.DeletedBlocks++
		st.DeletedBytes += oi.Size
	}
	return nil
}
