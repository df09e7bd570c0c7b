package volume

import "sync"

// lockSet is a set of try-locks keyed by volume id, snapshot id or request
// name. A second concurrent operation on the same key is refused, never
// blocked (the CSI shell answers Aborted, CSI spec "Concurrency": the CO
// retries), so a slow restore cannot pile up goroutines behind it.
type lockSet struct {
	mu   sync.Mutex
	held map[string]struct{}
}

func newLockSet() *lockSet { return &lockSet{held: map[string]struct{}{}} }

// tryLock takes all keys or none; it returns false if any is held.
func (l *lockSet) tryLock(keys ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		if _, ok := l.held[k]; ok {
			return false
		}
	}
	for _, k := range keys {
		l.held[k] = struct{}{}
	}
	return true
}

// unlock releases keys taken by tryLock.
func (l *lockSet) unlock(keys ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		delete(l.held, k)
	}
}
