package backend

import (
	"context"
	"fmt"
)

// Delete removes the lvol id: it marks the record "deleting", removes the
// data file (fsyncing the directory), then drops the record and its name. A
// crash in between is finished by the next Open. A record already
// "deleting" (an earlier Delete failed half-way) is finished too. Clones and
// snapshots of id are independent files and are not affected.
// Errors: ErrNotFound (also for a malformed id; CSI DeleteVolume treats it as
// success, CSI spec "DeleteVolume"), ctx's error, filesystem errors.
func (p *FilePool) Delete(ctx context.Context, id string) error {
	if !ValidID(id) {
		return fmt.Errorf("malformed id %q: %w", id, ErrNotFound)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r, err := p.meta.get(id)
	if err != nil {
		return err
	}
	// Name before id (see keyLocks): serialises with a Create of the same
	// name and with clones reading this lvol.
	defer p.locks.lock(nameKey(r.Kind, r.Name))()
	defer p.locks.lock(idKey(id))()
	_, err = p.meta.update(id, func(r *record) error {
		if r.State == stateCreating {
			return fmt.Errorf("lvol %s is %s: %w", id, r.State, ErrNotFound)
		}
		r.State = stateDeleting
		return nil
	})
	if err != nil {
		return err
	}
	crashPoint("delete:marked")
	return p.finishDelete(id)
}

// finishDelete removes the data files of a "deleting" record, then the record.
func (p *FilePool) finishDelete(id string) error {
	for _, path := range []string{p.dataPath(id), p.tmpPath(id)} {
		if err := removeData(path); err != nil {
			return err
		}
	}
	crashPoint("delete:removed")
	if err := p.meta.drop(id); err != nil {
		return err
	}
	crashPoint("delete:dropped")
	return nil
}
