package s3chain

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// RemovalStats is what deleting some backups would let a gc free
// (Repo.RemovalPreview), counted as GC counts what it deletes: block
// objects (plain and variant keys) and their stored bytes.
type RemovalStats struct {
	// FreedBlocks, FreedBytes: the block objects that only the removed
	// backups reference. YoungBlocks of them are younger than
	// DefaultGCMinAge: a gc with the default grace keeps those until then.
	FreedBlocks int
	FreedBytes  int64
	YoungBlocks int
	// UnreferencedBlocks, UnreferencedBytes: block objects no manifest
	// references already (left by earlier deletes or interrupted backups):
	// a gc frees them whether or not the backups are removed.
	UnreferencedBlocks int
	UnreferencedBytes  int64
	// EmptiesChain: no backup would be left; a gc then removes the chain.
	EmptiesChain bool
}

// RemovalPreview computes, from the chain's manifests and its block
// listing, what DeleteBackup of each of ids followed by a gc would free,
// and changes nothing. A version-1 backup that version-1 manifests kept
// still depend on only gets a tombstone, so its blocks stay referenced, as
// DeleteBackup and GC do it. A backup or gc running meanwhile can change
// the answer. Errors: those of Backups, and store errors.
func (r *Repo) RemovalPreview(ctx context.Context, chain string, ids []string) (RemovalStats, error) {
	var st RemovalStats
	all, gone, err := r.allManifests(ctx, chain, nil)
	if err != nil {
		return st, err
	}
	now := remainingAfter(all, gone)
	after := maps.Clone(gone)
	if after == nil {
		after = map[string]bool{}
	}
	for _, id := range ids {
		after[id] = true
	}
	kept := remainingAfter(all, after)
	st.EmptiesChain = !slices.ContainsFunc(kept, func(m *Manifest) bool { return !after[m.ID] })
	before, left := knownDigests(now), knownDigests(kept)
	err = r.store.List(ctx, blockDir(chain), func(oi store.ObjectInfo) error {
		d, ok := parseBlockKey(chain, oi.Key)
		switch {
		case !ok:
		case !before[d]:
			st.UnreferencedBlocks++
			st.UnreferencedBytes += oi.Size
		case !left[d]:
			st.FreedBlocks++
			st.FreedBytes += oi.Size
			if time.Since(oi.ModTime) < DefaultGCMinAge {
				st.YoungBlocks++
			}
		}
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("list the blocks of chain %q: %w", chain, err)
	}
	return st, nil
}

// remainingAfter returns the manifests of all that a gc keeps when the
// backups in gone are deleted: all but those deleted that no version-1
// manifest kept depends on (purgeTombstones, without deleting anything).
func remainingAfter(all []*Manifest, gone map[string]bool) []*Manifest {
	out := slices.Clone(all)
	for purged := true; purged; {
		purged = false
		for k, m := range out {
			if gone[m.ID] && !hasV1Dependent(out, m.ID) {
				out, purged = slices.Delete(out, k, k+1), true
				break
			}
		}
	}
	return out
}
