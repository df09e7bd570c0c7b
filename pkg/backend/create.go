package backend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/klog/v2"
)

// Create makes a new lvol, or returns the ready one of the same Kind and Name
// when its SizeBytes (after rounding up to 4096; 0 with a SourceID matches
// any) and SourceID are the same, as CSI CreateVolume/CreateSnapshot
// idempotency requires (CSI spec, "CreateVolume": a second call with the same
// name must return the existing volume). A new lvol is a sparse file of
// SizeBytes, or a reflink (else full sparse) copy of SourceID grown to
// SizeBytes. A snapshot normally has a SourceID; one without is an empty lvol
// (a restore target). Labels with empty values are dropped.
//
// Steps, each crash-safe: reserve a "creating" record; make the data file in
// tmp/ and fsync it; rename it into lvols/ and fsync the directory; mark the
// record "ready". Any failure undoes what was done.
//
// Errors: ErrInvalid (kind, empty or over-long name, size <= 0 without
// source, size below the source's), ErrExists (same name, other size or
// source), ErrNotFound (SourceID unknown or malformed), ErrNoSpace (size over
// the filesystem's total, or ENOSPC while copying), ctx's error.
func (p *FilePool) Create(ctx context.Context, o CreateOptions) (LVol, error) {
	if err := validateCreate(o); err != nil {
		return LVol{}, err
	}
	if err := ctx.Err(); err != nil {
		return LVol{}, err
	}
	defer p.locks.lock(nameKey(o.Kind, o.Name))()

	old, err := p.meta.getByName(o.Kind, o.Name)
	switch {
	case err == nil && old.State == stateReady:
		return sameOrExists(old, o)
	case err == nil:
		// Left over by an undo that failed; we hold its name, so nobody
		// else is working on it: finish it as recovery would.
		if err := p.settle(old); err != nil {
			return LVol{}, err
		}
	case !errors.Is(err, ErrNotFound):
		return LVol{}, err
	}

	var src record
	if o.SourceID != "" {
		// Hold the source so it is neither resized nor deleted mid-copy.
		defer p.locks.lock(idKey(o.SourceID))()
		if src, err = p.readyRecord(o.SourceID); err != nil {
			return LVol{}, fmt.Errorf("source: %w", err)
		}
	}
	size, err := createSize(o, src)
	if err != nil {
		return LVol{}, err
	}
	if err := p.checkFits(ctx, size); err != nil {
		return LVol{}, err
	}
	return p.create(ctx, o, src, size)
}

// create runs the crash-safe steps of Create for a new lvol of size bytes.
func (p *FilePool) create(ctx context.Context, o CreateOptions, src record, size int64) (LVol, error) {
	id, err := newID(o.Kind)
	if err != nil {
		return LVol{}, err
	}
	r := record{State: stateCreating, LVol: LVol{
		ID: id, Name: o.Name, Kind: o.Kind, SizeBytes: size, SourceID: o.SourceID,
		CreatedAt: time.Now().UTC(), Labels: mergeLabels(nil, o.Labels),
	}}
	if err := p.meta.reserve(r); err != nil {
		return LVol{}, err
	}
	crashPoint("create:reserved")
	if err := p.makeData(ctx, r, src); err != nil {
		p.undoCreate(r)
		return LVol{}, err
	}
	ready, err := p.meta.update(id, func(r *record) error { r.State = stateReady; return nil })
	if err != nil {
		p.undoCreate(r)
		return LVol{}, err
	}
	crashPoint("create:ready")
	return ready.LVol, nil
}

// makeData makes r's data file in tmp/, then publishes it into lvols/.
func (p *FilePool) makeData(ctx context.Context, r record, src record) error {
	tmp := p.tmpPath(r.ID)
	var err error
	if src.ID != "" {
		err = makeClone(ctx, tmp, p.dataPath(src.ID), r.SizeBytes, p.reflink)
	} else {
		err = makeEmpty(tmp, r.SizeBytes)
	}
	if err != nil {
		return err
	}
	crashPoint("create:synced")
	if err := publish(tmp, p.dataPath(r.ID)); err != nil {
		return err
	}
	crashPoint("create:published")
	return nil
}

// undoCreate removes what a failed create made, best effort: what it cannot
// remove, the next Create of the name or the next Open finishes.
func (p *FilePool) undoCreate(r record) {
	for _, path := range []string{p.tmpPath(r.ID), p.dataPath(r.ID)} {
		if err := removeData(path); err != nil {
			klog.ErrorS(err, "Undo create: cannot remove data file", "id", r.ID, "path", path)
		}
	}
	if err := p.meta.drop(r.ID); err != nil {
		klog.ErrorS(err, "Undo create: cannot drop record", "id", r.ID)
	}
}
