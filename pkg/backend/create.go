package backend

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/internal/durable"
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
// Steps, each crash-safe: make the data file in lvols/ and fsync it, fsync
// the directory, commit the record "ready" (create). Any failure undoes
// what was done.
//
// Errors: ErrInvalid (kind, empty or over-long name, size <= 0 without
// source, size below the source's), ErrExists (same name, other size or
// source), ErrNotFound (SourceID unknown or malformed), ErrNoSpace (size over
// the filesystem's total, or ENOSPC while copying), ctx's error; one that
// errors.Is fs.ErrExist when the new id's data file exists without a
// record (left by a crash: the retry draws another id).
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

// create runs the crash-safe steps of Create for a new lvol of size bytes:
// the data file is made and made durable under its final name (makeData),
// and only then is its record committed, ready, in one transaction. A
// crash before that commit leaves a data file in lvols/ that no record
// claims, which Open removes (recover); after it, a whole lvol. One commit
// rather than a "creating" record first and "ready" after: each bbolt
// commit is two device flushes, and the record had nothing to undo that
// recover's sweep of lvols/ does not (docs/BENCHMARKS.md, session 10).
func (p *FilePool) create(ctx context.Context, o CreateOptions, src record, size int64) (LVol, error) {
	id, err := newID(o.Kind)
	if err != nil {
		return LVol{}, err
	}
	r := record{State: stateReady, LVol: LVol{
		ID: id, Name: o.Name, Kind: o.Kind, SizeBytes: size, SourceID: o.SourceID,
		CreatedAt: time.Now().UTC(), Labels: mergeLabels(nil, o.Labels),
	}}
	if err := p.makeData(ctx, r, src); err != nil {
		if !errors.Is(err, fs.ErrExist) { // the O_EXCL create failed: not ours to remove
			p.undoData(r.ID)
		}
		return LVol{}, err
	}
	if err := p.meta.insert(r); err != nil {
		p.undoData(r.ID)
		return LVol{}, err
	}
	crashPoint("create:ready")
	return r.LVol, nil
}

// makeData makes r's data file in lvols/ (O_EXCL, so an id whose file
// exists is refused, never overwritten), fsynced, then fsyncs lvols/ so
// that its name survives a crash too: the file is durable and whole
// before any record names it. Errors: those of makeClone and makeEmpty
// (fs.ErrExist for an existing file), the directory's fsync.
func (p *FilePool) makeData(ctx context.Context, r record, src record) error {
	path := p.dataPath(r.ID)
	var err error
	if src.ID != "" {
		err = makeClone(ctx, path, p.dataPath(src.ID), r.SizeBytes, p.reflink)
	} else {
		err = makeEmpty(path, r.SizeBytes)
	}
	if err != nil {
		return err
	}
	crashPoint("create:synced")
	if err := durable.SyncDir(p.dataDir); err != nil {
		return fmt.Errorf("publish data file: %w", err)
	}
	crashPoint("create:published")
	return nil
}

// undoData removes the data file a failed create made, best effort: what
// it cannot remove has no record, and the next Open removes it.
func (p *FilePool) undoData(id string) {
	if err := removeData(p.dataPath(id)); err != nil {
		klog.ErrorS(err, "Undo create: cannot remove data file", "id", id, "path", p.dataPath(id))
	}
}
