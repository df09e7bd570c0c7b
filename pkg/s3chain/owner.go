package s3chain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// ownerPrefix holds a chain's ownership records (FORMAT.md §3.3):
// owners/E/SEQ.json, SEQ ten decimal digits from 1, each created with
// PutIfAbsent, so of two writers claiming or taking over a chain at once
// exactly one wins. The record with the greatest SEQ names the chain's
// owner; without any, the config's owner does.
const ownerPrefix = "owners/"

func ownerDir(chain string) string { return ownerPrefix + encodeChain(chain) + "/" }

func ownerKey(chain string, seq int) string { return fmt.Sprintf("%s%010d.json", ownerDir(chain), seq) }

// maxOwnerBytes bounds the read of an ownership record.
const maxOwnerBytes = 64 << 10

type ownerRecord struct {
	FormatVersion int       `json:"formatVersion"`
	Chain         string    `json:"chain"`
	Owner         string    `json:"owner"`
	Previous      string    `json:"previous"` // "" for a claim of an unowned chain
	CreatedAt     time.Time `json:"createdAt"`
}

// chainOwner returns the chain's owner ("" if none) and the sequence
// number of the record naming it (0: the config's owner, or none).
func (r *Repo) chainOwner(ctx context.Context, cfg *chainConfig) (string, int, error) {
	last := ""
	err := r.store.List(ctx, ownerDir(cfg.Chain), func(oi store.ObjectInfo) error {
		last = oi.Key // lexical order: zero-padded, so the greatest is last
		return nil
	})
	if err != nil {
		return "", 0, fmt.Errorf("list owners of chain %q: %w", cfg.Chain, err)
	}
	if last == "" {
		return cfg.Owner, 0, nil
	}
	seq, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(last, ownerDir(cfg.Chain)), ".json"))
	if err != nil {
		return "", 0, fmt.Errorf("%w: ownership record %s", ErrInvalidManifest, last)
	}
	data, err := r.store.GetMax(ctx, last, maxOwnerBytes)
	if err != nil {
		return "", 0, fmt.Errorf("read owner of chain %q: %w", cfg.Chain, err)
	}
	var rec ownerRecord
	if err := json.Unmarshal(data, &rec); err != nil || rec.Chain != cfg.Chain || rec.Owner == "" {
		return "", 0, fmt.Errorf("%w: ownership record %s", ErrInvalidManifest, last)
	}
	return rec.Owner, seq, nil
}

// checkOwner makes sure the backup o may write chain cfg: an unowned chain,
// or one without backups, is claimed for o.Owner; another owner's chain is
// ErrChainOwned unless o.TakeOver, which records o.Owner as its new owner.
// A backup without o.Owner is not checked.
func (r *Repo) checkOwner(ctx context.Context, cfg *chainConfig, o *BackupOptions) error {
	if o.Owner == "" {
		return nil
	}
	_, err := r.setOwner(ctx, cfg, o.Owner, func(prev string) error {
		if prev == "" || o.TakeOver {
			return nil
		}
		// A chain whose backups were all deleted holds no history to
		// mix with: a new source may take it over.
		ids, marked, err := r.backupIDs(ctx, cfg.Chain)
		if err == nil && (len(ids) > 0 || len(marked) > 0) {
			err = errOwned(cfg.Chain, prev, o.Owner)
		}
		return err
	})
	return err
}

// setOwner makes owner the owner of chain cfg unless it is already, after
// allow approves the change from the previous owner ("" for none), and
// returns that previous owner. Of racing changes exactly one record wins
// (PutIfAbsent); the loser looks again.
func (r *Repo) setOwner(ctx context.Context, cfg *chainConfig, owner string, allow func(prev string) error) (string, error) {
	for range 3 {
		prev, seq, err := r.chainOwner(ctx, cfg)
		if err != nil || prev == owner {
			return prev, err
		}
		if err := allow(prev); err != nil {
			return prev, err
		}
		err = r.recordOwner(ctx, cfg.Chain, seq+1, owner, prev)
		if !errors.Is(err, store.ErrObjectExists) {
			return prev, err
		}
	}
	return "", fmt.Errorf("%w: the owner of chain %q keeps changing", ErrChainBusy, cfg.Chain)
}

// recordOwner creates ownership record seq of chain naming owner.
func (r *Repo) recordOwner(ctx context.Context, chain string, seq int, owner, previous string) error {
	data, _ := json.Marshal(ownerRecord{FormatVersion, chain, owner, previous, time.Now().UTC()})
	rctx, err := r.retainedCtx(ctx)
	if err != nil {
		return err
	}
	err = r.store.PutIfAbsent(rctx, ownerKey(chain, seq), data)
	if errors.Is(err, store.ErrNotAtomic) {
		return errNoConditionalWrites(chain, err)
	}
	return err
}

// stillOwner checks, after a commit, that o.Owner still owns the chain: a
// takeover that landed before the commit wins, and the backup is not
// reported (FORMAT.md §3.3).
func (r *Repo) stillOwner(ctx context.Context, cfg *chainConfig, o *BackupOptions) error {
	if o.Owner == "" {
		return nil
	}
	owner, _, err := r.chainOwner(ctx, cfg)
	if err == nil && owner != o.Owner {
		err = errOwned(cfg.Chain, owner, o.Owner)
	}
	return err
}

func errOwned(chain, owner, writer string) error {
	return fmt.Errorf("%w: chain %q is the history of %q, and this backup is of %q: back it up to a chain of its own "+
		"(another chain name, or for a cluster another target prefix), or, to continue this chain on purpose (a planned "+
		"migration), take it over (chainvolctl chain take-over, or backup create --take-over)", ErrChainOwned, chain, owner, writer)
}

// TakeOver records owner as the owner of chain from now on, for a planned
// migration: later backups of the chain's previous owner are refused with
// ErrChainOwned (FORMAT.md §3.3). It returns the previous owner ("" if
// none). Errors: ErrBackupNotFound (no such chain), ErrInvalidChain,
// ErrWrongKey, store errors.
func (r *Repo) TakeOver(ctx context.Context, chain, owner string) (string, error) {
	if owner == "" {
		return "", fmt.Errorf("%w: an owner is needed to take chain %q over", ErrInvalidOptions, chain)
	}
	cfg, err := r.chain(ctx, chain, nil)
	if err != nil {
		return "", err
	}
	return r.setOwner(ctx, cfg, owner, func(string) error { return nil })
}

// Owner returns the owner of chain ("" if none recorded). Errors:
// ErrBackupNotFound, ErrInvalidChain, ErrWrongKey, store errors.
func (r *Repo) Owner(ctx context.Context, chain string) (string, error) {
	cfg, err := r.chain(ctx, chain, nil)
	if err != nil {
		return "", err
	}
	owner, _, err := r.chainOwner(ctx, cfg)
	return owner, err
}

// CheckOwner reports, before a backup of owner into chain is started,
// whether it would be refused: ErrChainOwned when the chain belongs to
// another owner. A chain that does not exist yet, has no owner, or an
// empty owner passes. Errors: ErrChainOwned, ErrInvalidChain, ErrWrongKey,
// store errors.
func (r *Repo) CheckOwner(ctx context.Context, chain, owner string) error {
	if owner == "" {
		return nil
	}
	cur, err := r.Owner(ctx, chain)
	if errors.Is(err, ErrBackupNotFound) {
		return nil
	}
	if err == nil && cur != "" && cur != owner {
		err = errOwned(chain, cur, owner)
	}
	return err
}
