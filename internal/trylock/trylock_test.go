package trylock

import (
	"errors"
	"testing"
)

// TestAllOrNone: TryLock takes all keys or none, and Unlock frees them.
func TestAllOrNone(t *testing.T) {
	s := New()
	if !s.TryLock("a", "b") || s.TryLock("b", "c") || !s.TryLock("c") {
		t.Fatal("TryLock is not all-or-none")
	}
	s.Unlock("a", "b", "c")
	if !s.TryLock("a", "b", "c") {
		t.Fatal("Unlock left a key held")
	}
}

// TestBusy: the refusal names what is held and wraps ErrBusy.
func TestBusy(t *testing.T) {
	err := Busy("pvc-1")
	if !errors.Is(err, ErrBusy) {
		t.Errorf("Busy does not wrap ErrBusy: %v", err)
	}
	if want := `an operation on "pvc-1" is already in progress; retry later`; err.Error() != want {
		t.Errorf("Busy: %q, want %q", err, want)
	}
}
