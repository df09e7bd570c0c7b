// Package trylock is a set of try-locks by key: a second concurrent holder
// of a key is refused, never blocked (CSI spec "Concurrency": the CSI
// shell answers Aborted and the CO retries), so that a slow call cannot
// pile up goroutines behind it. pkg/driver owns the one set of a driver
// and states each RPC's keys (pkg/driver/locks.go); pkg/volume takes keys
// in the same set where a story needs them (a snapshot's source). It is a
// leaf: it imports only the standard library.
package trylock

import (
	"errors"
	"fmt"
	"sync"
)

// ErrBusy: another operation holds the volume, snapshot or name
// (CSI spec "Concurrency": Aborted, the CO retries).
var ErrBusy = errors.New("an operation on it is already in progress; retry later")

// Busy is the refusal of a call while another operation holds what (a
// key, or the name a user knows it by); it wraps ErrBusy.
func Busy(what string) error { return &busy{what} }

type busy struct{ what string }

func (b *busy) Error() string {
	return fmt.Sprintf("an operation on %q is already in progress; retry later", b.what)
}

func (b *busy) Unwrap() error { return ErrBusy }

// Set is a set of try-locks keyed by volume id, snapshot id or request
// name. It is safe for concurrent use; the zero value is not: use New.
type Set struct {
	mu   sync.Mutex
	held map[string]struct{}
}

// New returns a set in which no key is held.
func New() *Set { return &Set{held: map[string]struct{}{}} }

// TryLock takes all keys or none, without blocking; it returns false if
// any is held.
func (s *Set) TryLock(keys ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		if _, ok := s.held[k]; ok {
			return false
		}
	}
	for _, k := range keys {
		s.held[k] = struct{}{}
	}
	return true
}

// Unlock releases keys taken by TryLock.
func (s *Set) Unlock(keys ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		delete(s.held, k)
	}
}
