package storetest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/btree"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// Mem is an in-memory store.Store for quick unit tests. It follows the
// same rules as the real stores (key validation, ErrObjectNotFound, lexical
// List order, ctx checks) and copies bytes in and out, so a caller that
// mutates a buffer after Put, or the slice returned by Get, cannot change
// what is stored. Safe for concurrent use.
type Mem struct {
	mu   sync.Mutex
	objs map[string]memObject
	lock memLock // Object Lock model (mem_lock.go); zero: a bucket without it
	// keys holds objs' keys in order, so that List costs the keys it
	// returns, not the whole store (the scale tests hold millions).
	keys *btree.BTreeG[string]
}

type memObject struct {
	data    []byte
	modTime time.Time
	ret     store.Retention
}

var _ store.Store = (*Mem)(nil)

// NewMem returns an empty in-memory store.
func NewMem() *Mem {
	return &Mem{objs: map[string]memObject{}, keys: btree.NewOrderedG[string](32)}
}

// Put stores a copy of data under key, with the retention of ctx
// (store.WithRetention). Errors: store.ErrObjectLocked (the key holds an
// object under retention), store.ErrNoObjectLock (a retention without
// Object Lock), store.ErrInvalidKey, ctx.Err().
func (m *Mem) Put(ctx context.Context, key string, data []byte) error {
	if err := check(ctx, key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.writable(ctx, "put", key); err != nil {
		return err
	}
	m.objs[key] = memObject{data: slices.Clone(data), modTime: time.Now(), ret: store.RetentionOf(ctx)}
	m.keys.ReplaceOrInsert(key)
	return nil
}

// Get is GetMax without a bound.
func (m *Mem) Get(ctx context.Context, key string) ([]byte, error) {
	return m.GetMax(ctx, key, math.MaxInt64)
}

// GetMax returns a copy of the object if it is at most maxBytes long.
// Errors: store.ErrObjectNotFound, store.ErrObjectTooLarge,
// store.ErrInvalidKey, ctx.Err().
func (m *Mem) GetMax(ctx context.Context, key string, maxBytes int64) ([]byte, error) {
	o, err := m.object(ctx, "get", key)
	if err != nil {
		return nil, err
	}
	if size := int64(len(o.data)); size > max(maxBytes, 0) {
		return nil, fmt.Errorf("mem get %q: %w: %d bytes, bound %d bytes", key, store.ErrObjectTooLarge, size, max(maxBytes, 0))
	}
	// Never nil, even for an empty object, like the real stores.
	return append([]byte{}, o.data...), nil
}

// PutIfAbsent stores a copy of data under key unless the key exists.
// Errors: store.ErrObjectExists, store.ErrInvalidKey, ctx.Err().
func (m *Mem) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := check(ctx, key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objs[key]; ok {
		return fmt.Errorf("mem put-if-absent %q: %w", key, store.ErrObjectExists)
	}
	if err := m.writable(ctx, "put-if-absent", key); err != nil {
		return err
	}
	m.objs[key] = memObject{data: slices.Clone(data), modTime: time.Now(), ret: store.RetentionOf(ctx)}
	m.keys.ReplaceOrInsert(key)
	return nil
}

// Stat returns the object's size in bytes and time of its last Put.
// Errors: store.ErrObjectNotFound, store.ErrInvalidKey, ctx.Err().
func (m *Mem) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	o, err := m.object(ctx, "stat", key)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	return store.ObjectInfo{Key: key, Size: int64(len(o.data)), ModTime: o.modTime}, nil
}

// object returns key's object as it is now (its data is never changed in
// place: Put stores a new copy). Errors: store.ErrObjectNotFound naming
// op, store.ErrInvalidKey, ctx.Err().
func (m *Mem) object(ctx context.Context, op, key string) (memObject, error) {
	if err := check(ctx, key); err != nil {
		return memObject{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[key]
	if !ok {
		return memObject{}, fmt.Errorf("mem %s %q: %w", op, key, store.ErrObjectNotFound)
	}
	return o, nil
}

// Delete removes key; a missing key is not an error.
// Errors: store.ErrObjectLocked (under retention), store.ErrInvalidKey,
// ctx.Err().
func (m *Mem) Delete(ctx context.Context, key string) error {
	if err := check(ctx, key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.unlocked("delete", key); err != nil {
		return err
	}
	delete(m.objs, key)
	m.keys.Delete(key)
	return nil
}

// List calls fn, in lexical key order, for a snapshot of the objects whose
// key starts with prefix, taken before the first call so fn may Put or
// Delete. An error from fn stops the listing and is returned unwrapped.
// Errors: store.ErrInvalidKey (bad prefix), ctx.Err().
func (m *Mem) List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := store.ValidatePrefix(prefix); err != nil {
		return err
	}
	m.mu.Lock()
	var infos []store.ObjectInfo
	m.keys.AscendGreaterOrEqual(prefix, func(k string) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		o := m.objs[k]
		infos = append(infos, store.ObjectInfo{Key: k, Size: int64(len(o.data)), ModTime: o.modTime})
		return true
	})
	m.mu.Unlock()
	for _, info := range infos {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(info); err != nil {
			return err
		}
	}
	return nil
}

// String returns "mem://".
func (m *Mem) String() string { return "mem://" }

// Len returns the number of stored objects.
func (m *Mem) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.objs)
}

func check(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return store.ValidateKey(key)
}
