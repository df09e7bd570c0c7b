package backend

import "sync"

// keyLocks is a set of mutexes addressed by string key, created on demand
// and dropped when nobody holds or waits for them. The pool uses it so that
// operations on different lvols run in parallel (a fallback full copy can take
// minutes) while those on the same name or id are serialised.
//
// Lock order, to rule out deadlock: a goroutine holds at most one "name:" key
// and takes it before any "id:" key; it holds at most one "id:" key.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	mu   sync.Mutex
	refs int // holders plus waiters, guarded by keyLocks.mu
}

// lock blocks until key is free, takes it and returns its unlock function.
func (k *keyLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = make(map[string]*keyLock)
	}
	l := k.m[key]
	if l == nil {
		l = &keyLock{}
		k.m[key] = l
	}
	l.refs++
	k.mu.Unlock()

	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		l.refs--
		if l.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}

func nameKey(k Kind, name string) string { return "name:" + string(k) + "/" + name }
func idKey(id string) string             { return "id:" + id }
