package s3chain

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// confirmRounds bounds the confirm loop: a round that stores nothing ends
// it; each stored block needs a round more to be seen by a new check.
const confirmRounds = 4

// confirm makes the committed manifest m safe against every gc, however
// late its deletes land (FORMAT.md §7): in rounds, it reads the doom
// records (after the commit), then finds for every digest of m an
// existing object that no record lists; a digest without one is read
// again from the source, checked, and stored — at its plain key unless
// that is doomed, else at a fresh variant key. A round that stored
// nothing means every block has a key no pending delete can reach; on an
// Object Lock target those keys and the config then get the backup's
// retention.
// Errors: ErrChainBusy (no stable round), ErrCorruptBlock (the source no
// longer holds the block's bytes), store and read errors.
func (j *backupJob) confirm(ctx context.Context, m *Manifest) error {
	need := j.neededBlocks()
	for range confirmRounds {
		doomed, err := j.r.doomedKeys(ctx, m.Chain)
		if err != nil {
			return err
		}
		missing, found, err := j.r.uncovered(ctx, m.Chain, need, doomed)
		if err != nil {
			return err
		}
		if len(missing) == 0 {
			return j.retainFound(ctx, found) // Object Lock: FORMAT.md §7.4
		}
		if err := j.storeAgain(ctx, missing, need, doomed); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: gc of chain %q keeps condemning blocks of backup %q", ErrChainBusy, m.Chain, m.ID)
}

// neededBlocks maps every distinct non-zero digest of the image to its
// first block index.
func (j *backupJob) neededBlocks() map[digest]int64 {
	need := map[digest]int64{}
	for i, d := range j.cur {
		if _, ok := need[d]; !ok && !d.isZero() {
			need[d] = int64(i)
		}
	}
	return need
}

// storeAgain stores again each missing digest from the source's block.
func (j *backupJob) storeAgain(ctx context.Context, missing []digest, need map[digest]int64, doomed map[string]bool) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(j.workers)
	for _, d := range missing {
		g.Go(func() error {
			i := need[d]
			data := make([]byte, j.blockLen(i))
			if _, err := j.src.ReadAt(data, i*j.bs); err != nil {
				return fmt.Errorf("read block %d of %s again: %w", i, j.o.Source, err)
			}
			if blockDigest(j.cfg.keys.names, data) != d {
				return fmt.Errorf("%w: block %d of %s changed during the backup", ErrCorruptBlock, i, j.o.Source)
			}
			obj, err := j.cfg.encodeBlock(data, d, nil, nil)
			if err != nil {
				return fmt.Errorf("block %d: %w", i, err)
			}
			key := blockKey(j.cfg.Chain, d.String())
			if doomed[key] {
				key = variantKey(j.cfg.Chain, d.String())
			}
			if err := j.put(ctx, key, obj); err != nil {
				return fmt.Errorf("store block %d again: %w", i, err)
			}
			j.stored.Add(int64(len(obj)))
			return nil
		})
	}
	return g.Wait()
}

// uncovered returns the digests of need that have no existing object
// outside doomed, and for the others the key of one such object. It
// lists the chain's blocks when that takes fewer round trips than asking
// about each digest (a HEAD of the plain key, and a listing of its
// variants only when that is missing or doomed).
func (r *Repo) uncovered(ctx context.Context, chain string, need map[digest]int64, doomed map[string]bool) ([]digest, map[digest]string, error) {
	var out []digest
	found := map[digest]string{}
	if len(need) == 0 {
		return nil, found, nil
	}
	if keys, complete := r.listBlockKeys(ctx, chain, confirmListBudget(len(need), DefaultWorkers)); complete {
		for d := range need {
			if k, ok := covered(keys[d], doomed); ok {
				found[d] = k
			} else {
				out = append(out, d)
			}
		}
		return out, found, nil
	}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(statWorkers * DefaultWorkers)
	for d := range need {
		g.Go(func() error {
			// A key a delete marker hides does not count, as in the
			// listing above: the backup stores the block again rather than
			// rest on a version read through only while its retention holds
			// by this clock (FORMAT.md §7.4 "Delete markers").
			k, err := r.locateBlock(store.CurrentOnly(gctx), chain, d, doomed)
			if err != nil && !errors.Is(err, store.ErrObjectNotFound) {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				out = append(out, d)
			} else {
				found[d] = k
			}
			return nil
		})
	}
	return out, found, g.Wait()
}

// confirmListBudget is listBudget; a test makes it 0 to take the HEAD path.
var confirmListBudget = listBudget

// covered returns the first of keys outside doomed.
func covered(keys []string, doomed map[string]bool) (string, bool) {
	for _, k := range keys {
		if !doomed[k] {
			return k, true
		}
	}
	return "", false
}

// listBlockKeys lists up to budget keys of chain's block prefix and
// returns the object keys of each digest (the plain key first) and whether
// the listing was complete. A failed listing counts as incomplete.
func (r *Repo) listBlockKeys(ctx context.Context, chain string, budget int) (map[digest][]string, bool) {
	keys := map[digest][]string{}
	n := 0
	err := r.store.List(ctx, blockDir(chain), func(oi store.ObjectInfo) error {
		if n++; n > budget {
			return errListBudget
		}
		if d, ok := parseBlockKey(chain, oi.Key); ok {
			keys[d] = append(keys[d], oi.Key) // lexical order: the plain key first
		}
		return nil
	})
	return keys, err == nil
}

// locateBlock returns an existing object key of digest d outside avoid
// (nil: none avoided): the plain key when it exists, else a variant.
// Errors: store.ErrObjectNotFound when there is none, store errors.
func (r *Repo) locateBlock(ctx context.Context, chain string, d digest, avoid map[string]bool) (string, error) {
	plain := blockKey(chain, d.String())
	if !avoid[plain] {
		_, err := r.store.Stat(ctx, plain)
		if err == nil {
			return plain, nil
		}
		if !errors.Is(err, store.ErrObjectNotFound) {
			return "", fmt.Errorf("check object %s: %w", plain, err)
		}
	}
	found := ""
	err := r.store.List(ctx, plain+variantSep, func(oi store.ObjectInfo) error {
		if got, ok := parseBlockKey(chain, oi.Key); ok && got == d && !avoid[oi.Key] {
			found = oi.Key
			return errListBudget // the first will do
		}
		return nil
	})
	if err != nil && !errors.Is(err, errListBudget) {
		return "", fmt.Errorf("list variants of %s: %w", plain, err)
	}
	if found == "" {
		return "", fmt.Errorf("object %s: %w", plain, store.ErrObjectNotFound)
	}
	return found, nil
}

// ConfirmBackup finishes the commit of backup id of chain whose writer
// stopped after creating its manifest (a restart): it confirms, as Backup
// does before reporting ready, that every block has an object no gc may
// still delete, storing again from source (the snapshot the backup was
// made of) what is missing or condemned. Only then may the backup be
// reported ready; in a chain with state records it creates the backup's
// ready record (FORMAT.md §7.5). Errors: ErrBackupNotFound (also for a
// voided backup), ErrCorruptBlock (source no
// longer holds the backup's bytes: the backup must be made again),
// ErrChainOwned (the chain was taken over meanwhile), ErrChainBusy, store
// and I/O errors.
func (r *Repo) ConfirmBackup(ctx context.Context, chain, id, source string) error {
	cfg, path, blocks, err := r.resolveWith(ctx, chain, id, r.unreadyManifest)
	if err != nil {
		return err
	}
	src, err := os.Open(source)
	if err != nil {
		return fmt.Errorf("open backup source: %w", err)
	}
	defer src.Close()
	m := path[0]
	ret, err := r.backupRetention(ctx, m.CreatedAt)
	if err != nil {
		return err
	}
	// Under a writer lease, as Backup: a gc meanwhile skips the chain
	// rather than voiding the manifest being confirmed (FORMAT.md §7.5).
	l, lctx, err := r.holdWriter(ctx, chain)
	if err != nil {
		return err
	}
	defer l.release(ctx)
	ctx = lctx
	j := &backupJob{r: r, o: &BackupOptions{Chain: chain, Source: source}, cfg: cfg, lease: l, src: src,
		size: m.SizeBytes, bs: m.BlockSize, workers: DefaultWorkers, cur: blocks, ret: ret}
	if err := j.confirm(ctx, m); err != nil {
		return err
	}
	// As after Backup's commit: a takeover that landed first wins.
	if err := r.stillOwner(ctx, cfg, &BackupOptions{Owner: m.Owner}); err != nil {
		r.disown(ctx, cfg, m, err)
		r.retract(ctx, cfg, m)
		return err
	}
	if err := j.makeReady(ctx, m); err != nil {
		r.retract(ctx, cfg, m)
		return err
	}
	return nil
}

// maxBlockTries bounds getBlock's tries of the objects of one digest.
const maxBlockTries = 8

// getBlock reads digest d with get, starting from key first; an object
// deleted meanwhile (a condemned key whose late delete landed: FORMAT.md
// §7) sends it to another object of d, never one it tried already, so a
// ready backup's object, which no delete reaches, is found in the end.
// Errors: get's (store.ErrObjectNotFound when none is left), locateBlock's.
func (r *Repo) getBlock(ctx context.Context, chain string, d digest, first string, get func(string) ([]byte, error)) (string, []byte, error) {
	tried := map[string]bool{}
	key := first
	for {
		obj, err := get(key)
		if !errors.Is(err, store.ErrObjectNotFound) || len(tried) >= maxBlockTries {
			return key, obj, err
		}
		tried[key] = true
		next, lerr := r.locateBlock(ctx, chain, d, tried)
		if lerr != nil {
			return key, nil, err
		}
		key = next
	}
}
