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
// other GCs, whatever pauses or clock steps occur (FORMAT.md §7). Per
// chain it takes a gc lock and skips the chain while a live writer lock
// exists (progress only); lists the blocks and reads every manifest;
// writes a doom record of the unreferenced objects older than o.MinAge;
// reads every manifest again; deletes what is still unreferenced, and
// removes its doom record once every delete was answered. A writer that
// commits after the second read finds the record and stores what it needs
// under other keys. A chain with an unreadable manifest is left alone;
// configs are never deleted. Errors: ErrInvalidChain, ErrWrongKey,
// ErrInvalidManifest, ErrLeaseLost, store errors.
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
	var broken error // the first chain left alone for an unreadable manifest
	for _, chain := range chains {
		err := r.gcChain(ctx, chain, &o, &st)
		switch {
		case errors.Is(err, ErrWrongKey) && o.Chain == "":
			// Another key's chain (one target may hold several): not ours
			// to judge, and no reason to leave the others uncollected.
			st.OtherKeyChains++
			continue
		case (errors.Is(err, ErrInvalidManifest) || errors.Is(err, ErrFormatVersion)) && o.Chain == "":
			// Its references are unknown: left alone (FORMAT.md §7.2),
			// the others still collected; the error is returned at the end.
			if broken == nil {
				broken = fmt.Errorf("gc chain %q: %w", chain, err)
			}
			continue
		case err != nil:
			return st, fmt.Errorf("gc chain %q: %w", chain, err)
		}
	}
	if err := r.sweepTemps(ctx, o, &st); err != nil {
		return st, err
	}
	if o.Chain != "" || o.DryRun {
		return st, broken
	}
	return st, errors.Join(broken, r.dropOrphanLocks(ctx, chains))
}

// dropOrphanLocks deletes the locks, abandoned for more than a lease TTL,
// of chains that have no config (a format-2 gc dropped the emptied chain,
// or a holder was killed before its config was created); doom records
// stay (FORMAT.md §7.1).
func (r *Repo) dropOrphanLocks(ctx context.Context, chains []string) error {
	known := map[string]bool{}
	for _, c := range chains {
		known[pendingDir(c)] = true
	}
	now := time.Now()
	return r.store.List(ctx, pendingPrefix, func(oi store.ObjectInfo) error {
		dir := oi.Key[:strings.LastIndexByte(oi.Key, '/')+1]
		if known[dir] || lockKind(oi.Key[len(dir):]) == kindDoom || now.Sub(oi.ModTime) < 2*r.lease {
			return nil
		}
		return r.store.Delete(ctx, oi.Key)
	})
}

func (r *Repo) gcChain(ctx context.Context, chain string, o *GCOptions, st *GCStats) error {
	if _, err := r.chain(ctx, chain, nil); err != nil {
		return err
	}
	st.Chains++
	l, lctx, err := r.hold(ctx, chain, kindGC)
	if err != nil {
		return err
	}
	defer l.release(ctx)
	return leaseErr(ctx, lctx, r.gcHeld(lctx, l, chain, o, st))
}

// gcHeld is gcChain's work under the gc lease l, whose context is lctx.
func (r *Repo) gcHeld(lctx context.Context, l *lease, chain string, o *GCOptions, st *GCStats) error {
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
	live, err := r.referencedTidy(lctx, l, chain, o, st)
	if err != nil {
		return err
	}
	doomed, err := r.unlocked(lctx, r.candidates(l, chain, objs, live, o, st), l.server, st)
	if err != nil {
		return err
	}
	if len(doomed) == 0 || o.DryRun {
		countDeleted(doomed, st)
		return nil
	}
	return r.condemn(lctx, chain, doomed, st)
}

// condemn deletes the candidate block objects in two steps that make a
// late delete harmless (FORMAT.md §7): first a doom record lists them,
// then every manifest is read again and only what is still unreferenced is
// deleted. A writer that commits after that second read finds the record
// and stops relying on those keys; one that committed before it is seen
// by it. The record goes only once every delete sent was answered.
func (r *Repo) condemn(ctx context.Context, chain string, cands []store.ObjectInfo, st *GCStats) error {
	keys := make([]string, len(cands))
	for i, oi := range cands {
		keys[i] = oi.Key
	}
	records, err := r.writeDooms(ctx, chain, keys)
	if err != nil {
		r.dropDooms(ctx, records) // no delete was sent: what landed may go
		return err
	}
	answered := true // no delete sent yet: the records may go
	defer func() {
		if answered {
			r.dropDooms(ctx, records)
		}
	}()
	live, err := r.referenced(ctx, chain)
	if err != nil {
		return err
	}
	for _, oi := range cands {
		if d, _ := parseBlockKey(chain, oi.Key); live[d] {
			continue // referenced again (a backup committed meanwhile)
		}
		if err := ctx.Err(); err != nil {
			return err // nothing more sent: every delete so far was answered
		}
		err := r.deleteAnswered(ctx, oi.Key)
		if errors.Is(err, store.ErrObjectLocked) {
			// Judged past its retention by the lease's server time, refused
			// by the store's clock now (a backward step, or a gateway
			// behind): still locked, so kept, and the refusal was an
			// answer (nothing of it can land later).
			st.LockedBlocks++
			st.LockedBytes += oi.Size
			continue
		}
		if err != nil {
			answered = false // it may still land: the record must stay
			return err
		}
		st.DeletedBlocks++
		st.DeletedBytes += oi.Size
	}
	return nil
}

// deleteAnswered deletes key, trying again a few times after a failure,
// since only a delete that was answered lets its gc remove its doom record;
// a refusal for Object Lock retention (store.ErrObjectLocked) is an answer.
func (r *Repo) deleteAnswered(ctx context.Context, key string) error {
	wait := 20 * time.Millisecond
	for try := 1; ; try++ {
		err := r.store.Delete(ctx, key)
		if err == nil || errors.Is(err, store.ErrObjectLocked) || try == 3 || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait *= 4
	}
}

func countDeleted(objs []store.ObjectInfo, st *GCStats) {
	for _, oi := range objs {
		st.DeletedBlocks++
		st.DeletedBytes += oi.Size
	}
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
		if o.kind != kindDoom && !r.live(o, l.server) && !dryRun {
			if err := r.store.Delete(ctx, o.Key); err != nil {
				return false, err
			}
		}
	}
	return false, nil
}

// referenced returns the digests every manifest of chain lists (deleted
// version-1 ones kept for their dependents, and in a chain with state
// records every manifest not dead: ready or pending, FORMAT.md §7.5),
// read after the chain's locks were checked, and purges tombstones nothing
// depends on. A manifest deleted meanwhile is skipped; any other failure
// stops the gc of the chain.
func (r *Repo) referenced(ctx context.Context, chain string) (map[digest]bool, error) {
	live := map[digest]bool{}
	// Each ready manifest's digests join the set as it is read (the sink),
	// so a chain's memory is its distinct blocks, not every manifest's
	// list; a chain with tombstones is read whole as before.
	c, err := r.listManifests(ctx, chain, func(m *Manifest) { addDigests(live, m) })
	if err != nil {
		return nil, err
	}
	return r.liveDigests(ctx, chain, c, live)
}

// referencedTidy is referenced for the gc's first read: in a chain with
// state records it first voids the manifests abandoned unready (older than
// o.MinAge by the store's clock, while no writer holds the chain) and
// deletes the dead ones (FORMAT.md §7.5), unless o.DryRun.
func (r *Repo) referencedTidy(ctx context.Context, l *lease, chain string, o *GCOptions, st *GCStats) (map[digest]bool, error) {
	live := map[digest]bool{}
	c, err := r.listManifests(ctx, chain, func(m *Manifest) { addDigests(live, m) })
	if err != nil {
		return nil, err
	}
	if c.cfg != nil && c.cfg.ReadyRecords && !o.DryRun {
		if err := r.dropUnready(ctx, l, c, o.MinAge, st); err != nil {
			return nil, err
		}
	}
	return r.liveDigests(ctx, chain, c, live)
}

// liveDigests adds to live (the digests of the ready manifests a sink
// saw) those of every manifest of c still whole and not dead: all of them
// when c was read without a sink, else the pending ones, which dropUnready
// may have voided meanwhile. It purges tombstones nothing depends on.
func (r *Repo) liveDigests(ctx context.Context, chain string, c manifestSet, live map[digest]bool) (map[digest]bool, error) {
	all, err := r.purgeTombstones(ctx, chain, c.all, c.gone)
	if err != nil {
		return nil, err
	}
	for _, m := range all {
		if c.state[m.ID] != dead {
			addDigests(live, m)
		}
	}
	return live, nil
}

// dropUnready voids c's pending manifests older than minAge and deletes
// every dead manifest: none is ever a backup, and its id's record stays,
// so the delete, however late it lands, removes nothing that is. Voiding
// one whose writer still confirms only makes that writer fail (markReady).
func (r *Repo) dropUnready(ctx context.Context, l *lease, c manifestSet, minAge time.Duration, st *GCStats) error {
	for _, m := range c.all {
		if c.state[m.ID] == pending && l.server.Sub(c.mtime[m.ID]) >= minAge {
			isDead, err := r.voidManifest(ctx, m)
			if errors.Is(err, store.ErrNotAtomic) {
				// A store without create-if-absent (§7.3) cannot void:
				// the manifest stays pending, its blocks kept; gc still works.
				continue
			}
			if err != nil {
				return err
			}
			if isDead {
				c.state[m.ID] = dead
				st.VoidedBackups++
			}
		}
		if c.state[m.ID] != dead {
			continue
		}
		if err := r.store.Delete(ctx, manifestKey(m.Chain, m.ID)); err != nil {
			return fmt.Errorf("delete unready manifest of backup %q in chain %q: %w", m.ID, m.Chain, err)
		}
		st.DeletedManifests++
	}
	return nil
}

// candidates returns the block objects among objs (plain and variant keys)
// whose digest no manifest references and that are at least o.MinAge old
// by the store's clock (MinAge only spares a running backup's new blocks
// the detour of a variant; safety does not depend on it).
func (r *Repo) candidates(l *lease, chain string, objs []store.ObjectInfo, live map[digest]bool, o *GCOptions, st *GCStats) []store.ObjectInfo {
	var out []store.ObjectInfo
	for _, oi := range objs {
		d, ok := parseBlockKey(chain, oi.Key)
		if !ok {
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
		out = append(out, oi)
	}
	return out
}
