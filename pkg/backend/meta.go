package backend

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"
)

// state is the life-cycle step of an lvol record. Only stateReady records are
// ever shown to callers; the others exist so that a crash at any point can
// be rolled back (creating) or forward (deleting) by recover.
type state string

const (
	stateCreating state = "creating"
	stateReady    state = "ready"
	stateDeleting state = "deleting"
)

// record is what pool.db holds for one lvol, keyed by id in bucketLVols.
type record struct {
	LVol
	State state `json:"state"`
}

var (
	bucketLVols = []byte("lvols")
	bucketMeta  = []byte("meta")
	keyVersion  = []byte("version")
	// metaVersion is bumped on an incompatible change of record's encoding.
	metaVersion = []byte("1")
)

// nameBucket is the name → id index of one kind; names are unique per kind.
func nameBucket(k Kind) []byte { return []byte("names-" + string(k)) }

// metaStore is the bbolt database of records. bbolt serialises writers and
// fsyncs each commit, so every method below is one atomic, durable step.
type metaStore struct{ db *bbolt.DB }

// openMeta opens (creating if needed) the database at path. It fails rather
// than waits forever when another process holds the pool (bbolt's flock).
func openMeta(path string) (*metaStore, error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 10 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open pool metadata %s: %w", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketLVols, bucketMeta, nameBucket(KindVolume), nameBucket(KindSnapshot)} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		m := tx.Bucket(bucketMeta)
		if v := m.Get(keyVersion); v != nil && string(v) != string(metaVersion) {
			return fmt.Errorf("pool metadata version %q, this build reads %q", v, metaVersion)
		}
		return m.Put(keyVersion, metaVersion)
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("init pool metadata %s: %w", path, err)
	}
	return &metaStore{db: db}, nil
}

func (m *metaStore) close() error { return m.db.Close() }

func readRecord(tx *bbolt.Tx, id string) (record, error) {
	v := tx.Bucket(bucketLVols).Get([]byte(id))
	if v == nil {
		return record{}, fmt.Errorf("lvol %s: %w", id, ErrNotFound)
	}
	var r record
	if err := json.Unmarshal(v, &r); err != nil {
		return record{}, fmt.Errorf("decode record %s: %w", id, err)
	}
	return r, nil
}

func writeRecord(tx *bbolt.Tx, r record) error {
	v, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode record %s: %w", r.ID, err)
	}
	return tx.Bucket(bucketLVols).Put([]byte(r.ID), v)
}

// get returns the record of id in any state. Errors: ErrNotFound.
func (m *metaStore) get(id string) (r record, err error) {
	err = m.db.View(func(tx *bbolt.Tx) error {
		r, err = readRecord(tx, id)
		return err
	})
	return r, err
}

// getByName returns the record named name of kind k in any state.
// Errors: ErrNotFound.
func (m *metaStore) getByName(k Kind, name string) (r record, err error) {
	err = m.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(nameBucket(k))
		if b == nil {
			return fmt.Errorf("kind %q: %w", k, ErrNotFound)
		}
		id := b.Get([]byte(name))
		if id == nil {
			return fmt.Errorf("%s %q: %w", k, name, ErrNotFound)
		}
		r, err = readRecord(tx, string(id))
		return err
	})
	return r, err
}

// all returns every record in any state, sorted by id (bbolt key order).
func (m *metaStore) all() ([]record, error) {
	var out []record
	err := m.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketLVols).ForEach(func(k, v []byte) error {
			var r record
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode record %s: %w", k, err)
			}
			out = append(out, r)
			return nil
		})
	})
	return out, err
}

// insert stores the new record r and its name index entry in one
// transaction. Errors: ErrExists when the name or id is already taken.
func (m *metaStore) insert(r record) error {
	return m.db.Update(func(tx *bbolt.Tx) error {
		names := tx.Bucket(nameBucket(r.Kind))
		if names.Get([]byte(r.Name)) != nil {
			return fmt.Errorf("%s %q: %w", r.Kind, r.Name, ErrExists)
		}
		if tx.Bucket(bucketLVols).Get([]byte(r.ID)) != nil {
			return fmt.Errorf("id %s: %w", r.ID, ErrExists)
		}
		if err := names.Put([]byte(r.Name), []byte(r.ID)); err != nil {
			return err
		}
		return writeRecord(tx, r)
	})
}

// update applies fn to the record of id inside one transaction and stores
// the result; fn's error aborts it. Errors: ErrNotFound, fn's error.
func (m *metaStore) update(id string, fn func(*record) error) (r record, err error) {
	err = m.db.Update(func(tx *bbolt.Tx) error {
		if r, err = readRecord(tx, id); err != nil {
			return err
		}
		if err = fn(&r); err != nil {
			return err
		}
		return writeRecord(tx, r)
	})
	return r, err
}

// drop deletes the record of id and its name index entry (if the entry
// still points at id). Dropping an absent record is not an error.
func (m *metaStore) drop(id string) error {
	return m.db.Update(func(tx *bbolt.Tx) error {
		r, err := readRecord(tx, id)
		if errors.Is(err, ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		if names := tx.Bucket(nameBucket(r.Kind)); names != nil && string(names.Get([]byte(r.Name))) == id {
			if err := names.Delete([]byte(r.Name)); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketLVols).Delete([]byte(id))
	})
}
