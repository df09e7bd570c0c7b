package s3chain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// State records (FORMAT.md §7.5): in a chain whose config sets
// readyRecords, a manifest is a backup only once the state record of its
// id, manifests/E/ID.state, says "ready" with the manifest's digest. The
// record is created with PutIfAbsent and never changed or deleted, so
// whoever creates it first decides the fate of the id for good: its writer
// after its confirm passed ("ready"), or a delete or a gc of an abandoned
// manifest ("void": no manifest under the id is ever a backup).
const (
	stateSuffix   = ".state"
	stateReady    = "ready"
	stateVoid     = "void"
	maxStateBytes = 4 << 10
)

func stateKey(chain, id string) string { return manifestDir(chain) + id + stateSuffix }

type stateRecord struct {
	FormatVersion int    `json:"formatVersion"`
	Chain         string `json:"chain"`
	ID            string `json:"id"`
	State         string `json:"state"` // stateReady or stateVoid
	// Manifest is the Manifest.Digest of the manifest it decides; "" in a
	// void record of a delete: every manifest under the id is dead.
	Manifest  string    `json:"manifest"`
	CreatedAt time.Time `json:"createdAt"`
}

// readiness is what a chain's state records say of one stored manifest.
type readiness int

const (
	// pending: no record yet; its writer (or Repo.ConfirmBackup) may still
	// make it ready, or a gc void it. Its blocks are kept.
	pending readiness = iota
	// ready: a backup, listed and restorable (I4).
	ready
	// dead: voided, or its id's record decides another manifest: it is
	// never a backup, and may be deleted at any time.
	dead
)

// of classifies manifest m by rec (nil: no record).
func (rec *stateRecord) of(m *Manifest) readiness {
	switch {
	case rec == nil:
		return pending
	case rec.State == stateReady && rec.Manifest == m.Digest():
		return ready
	}
	return dead
}

// readState reads the state record of id in chain: nil when there is
// none. Errors: ErrInvalidManifest (not a record of that id, or larger
// than any record), store errors.
func (r *Repo) readState(ctx context.Context, chain, id string) (*stateRecord, error) {
	if rec, ok := r.states.Load(stateKey(chain, id)); ok {
		return rec.(*stateRecord), nil
	}
	data, err := r.store.GetMax(ctx, stateKey(chain, id), maxStateBytes)
	if errors.Is(err, store.ErrObjectNotFound) {
		return nil, nil
	}
	if errors.Is(err, store.ErrObjectTooLarge) { // no record is: damaged, as a manifest too large
		return nil, fmt.Errorf("%w: state record of backup %q in chain %q: %w", ErrInvalidManifest, id, chain, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read state of backup %q in chain %q: %w", id, chain, err)
	}
	var rec stateRecord
	if err := json.Unmarshal(data, &rec); err != nil || rec.Chain != chain || rec.ID != id ||
		(rec.State != stateReady && rec.State != stateVoid) {
		return nil, fmt.Errorf("%w: state record of backup %q in chain %q", ErrInvalidManifest, id, chain)
	}
	r.states.Store(stateKey(chain, id), &rec)
	return &rec, nil
}

// decide creates the state record of m's id saying state for m's digest,
// unless one exists, and returns the record that decides the id: the one
// it created, or the one that was there. A create whose answer was lost
// (an error, though it may have landed) is read back, so the caller never
// mistakes its own landed record for another's. Errors: store errors
// (nothing is known then).
func (r *Repo) decide(ctx context.Context, chain, id, manifestDigest, state string) (*stateRecord, error) {
	rec, err := r.createState(ctx, chain, id, manifestDigest, state)
	if err == nil || errors.Is(err, store.ErrBadTarget) {
		return rec, err
	}
	got, rerr := r.readState(context.WithoutCancel(ctx), chain, id)
	if rerr == nil && got != nil {
		return got, nil
	}
	return nil, fmt.Errorf("record state of backup %q in chain %q: %w", id, chain, errors.Join(err, rerr))
}

// createState creates the record of id saying state for manifestDigest.
// Errors: store.ErrObjectExists (the id is decided), ErrNotAtomic wrapped in
// store.ErrBadTarget (errNoConditionalWrites), store errors.
func (r *Repo) createState(ctx context.Context, chain, id, manifestDigest, state string) (*stateRecord, error) {
	rec := &stateRecord{FormatVersion: FormatVersion, Chain: chain, ID: id, State: state,
		Manifest: manifestDigest, CreatedAt: time.Now().UTC()}
	data, _ := json.Marshal(rec)
	err := r.store.PutIfAbsent(ctx, stateKey(chain, id), data)
	if errors.Is(err, store.ErrNotAtomic) {
		return nil, errNoConditionalWrites(chain, err)
	}
	if err == nil {
		r.states.Store(stateKey(chain, id), rec)
	}
	return rec, err
}

// markReady makes committed and confirmed m a ready backup: it creates its
// ready record, or finds it already landed. Errors: ErrChainBusy (a gc
// voided m meanwhile: its writer took longer than its lease, FORMAT.md
// §7.5), ErrBackupExists (the id was decided before, for an earlier
// backup: ids of such chains are never reused), store errors (m may or may
// not be ready: it is listed only if its record landed).
func (r *Repo) markReady(ctx context.Context, m *Manifest) error {
	rec, err := r.decide(ctx, m.Chain, m.ID, m.Digest(), stateReady)
	switch {
	case err != nil:
		return err
	case rec.of(m) == ready:
		return nil
	case rec.Manifest == m.Digest():
		return fmt.Errorf("%w: backup %q of chain %q was voided while it was confirmed (abandoned: its lease lapsed); make it again", ErrChainBusy, m.ID, m.Chain)
	}
	return errIDUsed(m.Chain, m.ID)
}

// voidManifest makes sure m never becomes a backup: it creates a void
// record for it unless the id is decided already, and reports whether m is
// now dead (false: m was ready). Errors: store errors.
func (r *Repo) voidManifest(ctx context.Context, m *Manifest) (bool, error) {
	rec, err := r.decide(ctx, m.Chain, m.ID, m.Digest(), stateVoid)
	if err != nil {
		return false, err
	}
	return rec.of(m) == dead, nil
}

func errIDUsed(chain, id string) error {
	return fmt.Errorf("%w: backup id %q of chain %q was used before (a chain with state records never reuses an id, FORMAT.md §7.5): choose another", ErrBackupExists, id, chain)
}

// classify records in c the readiness of m, a manifest object of c's
// chain read whole (its digest needs its block list), by its state record;
// withState lists the ids that have one (from the same listing). A chain
// without state records has every manifest ready.
func (r *Repo) classify(ctx context.Context, c *manifestSet, m *Manifest, withState map[string]bool) error {
	if !c.cfg.ReadyRecords {
		c.state[m.ID] = ready
		return nil
	}
	var rec *stateRecord
	if withState[m.ID] {
		var err error
		if rec, err = r.readState(ctx, c.cfg.Chain, m.ID); err != nil {
			return err
		}
	}
	c.state[m.ID] = rec.of(m)
	return nil
}

// checkReady fails unless m is a ready backup: ErrBackupNotReady for a
// manifest no record decides yet, ErrBackupNotFound for a dead one.
func (r *Repo) checkReady(ctx context.Context, m *Manifest) error {
	rec, err := r.readState(ctx, m.Chain, m.ID)
	if err != nil {
		return err
	}
	switch rec.of(m) {
	case ready:
		return nil
	case pending:
		return fmt.Errorf("%w: backup %q of chain %q was committed but not confirmed (a writer still running, or stopped: Repo.ConfirmBackup finishes it)", ErrBackupNotReady, m.ID, m.Chain)
	}
	return fmt.Errorf("%w: backup %q of chain %q never became ready (voided)", ErrBackupNotFound, m.ID, m.Chain)
}

// unreadyManifest returns the manifest of id in chain, ready or not yet
// decided (Repo.ConfirmBackup finishes the latter); a dead one is
// ErrBackupNotFound.
func (r *Repo) unreadyManifest(ctx context.Context, chain, id string) (*Manifest, error) {
	m, err := r.Manifest(ctx, chain, id)
	if errors.Is(err, ErrBackupNotReady) {
		return m, nil
	}
	return m, err
}

// idDecided reports whether id of chain has a state record (a read error
// counts as none: markReady decides in the end).
func (r *Repo) idDecided(ctx context.Context, chain, id string) bool {
	rec, err := r.readState(ctx, chain, id)
	return err == nil && rec != nil
}
