package backend

import (
	"context"
	"fmt"
)

// readyRecord returns the record of id if it is ready. Errors: ErrNotFound,
// also for an id not matching IDPattern, which never reaches the store.
func (p *FilePool) readyRecord(id string) (record, error) {
	if !ValidID(id) {
		return record{}, fmt.Errorf("malformed id %q: %w", id, ErrNotFound)
	}
	r, err := p.meta.get(id)
	if err != nil {
		return record{}, err
	}
	if r.State != stateReady {
		return record{}, fmt.Errorf("lvol %s is %s: %w", id, r.State, ErrNotFound)
	}
	return r, nil
}

// Get returns the ready lvol id. Errors: ErrNotFound (also for a malformed id).
func (p *FilePool) Get(ctx context.Context, id string) (LVol, error) {
	r, err := p.readyRecord(id)
	return r.LVol, err
}

// GetByName returns the ready lvol of kind k named name. Errors: ErrNotFound.
func (p *FilePool) GetByName(ctx context.Context, k Kind, name string) (LVol, error) {
	r, err := p.meta.getByName(k, name)
	if err != nil {
		return LVol{}, err
	}
	if r.State != stateReady {
		return LVol{}, fmt.Errorf("%s %q is %s: %w", k, name, r.State, ErrNotFound)
	}
	return r.LVol, nil
}

// List returns the ready lvols of kind k ("" for every kind), sorted by ID.
// Errors: ErrInvalid for an unknown kind.
func (p *FilePool) List(ctx context.Context, k Kind) ([]LVol, error) {
	if k != "" && idPrefix(k) == "" {
		return nil, fmt.Errorf("kind %q: %w", k, ErrInvalid)
	}
	all, err := p.meta.all()
	if err != nil {
		return nil, err
	}
	out := make([]LVol, 0, len(all))
	for _, r := range all {
		if r.State == stateReady && (k == "" || r.Kind == k) {
			out = append(out, r.LVol)
		}
	}
	return out, nil
}
