package s3chain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// kindDoom names a doom record: pending/E/doom-TOKEN.json, the exact block
// keys a gc may delete (FORMAT.md §7). It is stored before the gc's last
// read of the manifests and removed only by that gc, once every delete it
// sent was answered; a gc killed or failing on the way leaves it for good.
// A writer never trusts a key a doom record lists: however late the gc's
// delete lands, the writer's backup relies on another key.
const kindDoom = "doom"

// doomRecordBytes bounds the keys one doom record lists (their bytes, as
// JSON); a gc condemning more writes several. Keys are up to ~380 bytes
// (a 300-byte escaped chain name), so a record holds at least ~11,000.
const doomRecordBytes = 4 << 20

// maxDoomBytes bounds the read of one doom record (FORMAT.md §4.3): well
// above what a writer makes, so a record is always readable.
const maxDoomBytes = 16 << 20

type doomBody struct {
	FormatVersion int      `json:"formatVersion"`
	Chain         string   `json:"chain"`
	Kind          string   `json:"kind"`
	Keys          []string `json:"keys"`
}

// writeDooms stores doom records for keys (in records of at most
// doomRecordBytes of keys) and returns their keys, also that of a write that failed
// (it may have landed): the caller then sends no delete, so it may remove
// them.
func (r *Repo) writeDooms(ctx context.Context, chain string, keys []string) ([]string, error) {
	var out []string
	for len(keys) > 0 {
		n, size := 0, 0
		for n < len(keys) && (n == 0 || size+len(keys[n])+3 <= doomRecordBytes) {
			size += len(keys[n]) + 3 // quotes and comma
			n++
		}
		key := pendingKey(chain, kindDoom+"-"+randomHex(8))
		data, _ := json.Marshal(doomBody{FormatVersion, chain, kindDoom, keys[:n]})
		out = append(out, key)
		if err := r.store.Put(ctx, key, data); err != nil {
			return out, fmt.Errorf("write doom record of chain %q: %w", chain, err)
		}
		keys = keys[n:]
	}
	return out, nil
}

// doomedKeys returns every block key some doom record of chain lists, read
// after the caller's manifest commit (FORMAT.md §7, confirm). A record
// that vanished between the listing and its read was removed by its gc
// after all its deletes were answered, so its keys are no longer doomed.
func (r *Repo) doomedKeys(ctx context.Context, chain string) (map[string]bool, error) {
	locks, err := r.locks(ctx, chain, "")
	if err != nil {
		return nil, err
	}
	doomed := map[string]bool{}
	for _, l := range locks {
		if l.kind != kindDoom {
			continue
		}
		data, err := r.store.GetMax(store.CurrentOnly(ctx), l.Key, maxDoomBytes) // never read through (lease.go)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read doom record %s: %w", l.Key, err)
		}
		var b doomBody
		if err := json.Unmarshal(data, &b); err != nil || b.Kind != kindDoom {
			// Unreadable: its keys are unknown, so no key can be trusted.
			return nil, fmt.Errorf("%w: doom record %s is unreadable", ErrChainBusy, l.Key)
		}
		for _, k := range b.Keys {
			doomed[k] = true
		}
	}
	return doomed, nil
}

// dropDooms removes a gc's own doom records, once every delete it sent was
// answered (or none was sent). Failures leave them: harmless, they only
// make writers use variant keys for what they list.
func (r *Repo) dropDooms(ctx context.Context, keys []string) {
	ctx = context.WithoutCancel(ctx)
	for _, k := range keys {
		_ = r.store.Delete(ctx, k)
	}
}

func isNotFound(err error) bool { return err != nil && errors.Is(err, store.ErrObjectNotFound) }

// lockKind is the kind of a pending/ object from its name: writer, gc or
// doom; version-1 markers (TOKEN.json) count as writers.
func lockKind(name string) string {
	kind, _, ok := strings.Cut(name, "-")
	if ok && (kind == kindGC || kind == kindDoom) {
		return kind
	}
	return kindWriter
}
