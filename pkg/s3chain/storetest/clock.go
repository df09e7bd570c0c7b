package storetest

import (
	"sync"
	"sync/atomic"
	"time"
)

// storeClock is the clock a Faulty and its views report object times by:
// each object written through one of them keeps the shift of the clock at
// the moment its write landed, as a store assigns LastModified when it
// receives a PUT. A Faulty's shift is the store's steps plus its own skew.
type storeClock struct {
	used   atomic.Bool // a clock was ever stepped or skewed: stamps are kept
	mu     sync.Mutex
	step   time.Duration            // the store's clock steps so far
	stamps map[string]time.Duration // per key: the shift of its last write
}

func newStoreClock() *storeClock { return &storeClock{stamps: map[string]time.Duration{}} }

// StepClock steps the store's clock by d (negative: backwards), as an NTP
// step of the server would: objects written from now on, through this
// Faulty or any of its views, report ModTimes (Stat, List) shifted by the
// sum of the steps; objects written before keep the times they had.
func (f *Faulty) StepClock(d time.Duration) {
	f.clock.used.Store(true)
	f.clock.mu.Lock()
	defer f.clock.mu.Unlock()
	f.clock.step += d
}

// SkewClock shifts by d the clock of this Faulty only, not of its views: a
// gateway of the store whose clock disagrees with the others'. Objects
// written through it from now on report ModTimes shifted by d more, to
// every view.
func (f *Faulty) SkewClock(d time.Duration) {
	f.clock.used.Store(true)
	f.clock.mu.Lock()
	defer f.clock.mu.Unlock()
	f.skew += d
}

// ClockShift returns how far the ModTimes of objects written through f now
// are shifted: the store's steps plus f's skew.
func (f *Faulty) ClockShift() time.Duration {
	f.clock.mu.Lock()
	defer f.clock.mu.Unlock()
	return f.clock.step + f.skew
}

// View returns another client of the same store: a Faulty over the same
// inner store and clock, with f's skew and conditional-writes setting but
// its own faults and counters (one actor's network, as a process sees it).
func (f *Faulty) View() *Faulty {
	v := NewFaulty(f.inner)
	f.mu.Lock()
	v.noCond = f.noCond
	f.mu.Unlock()
	f.clock.mu.Lock()
	v.clock, v.skew = f.clock, f.skew
	f.clock.mu.Unlock()
	return v
}

// written runs the inner write do of key and, if it took effect, stamps
// key with f's current shift (removed is set for a Delete). The clock is
// held across the write so that no reader sees the object with a stale
// stamp; until a clock is first shifted, writes run without it (and in
// parallel: benchmarks wrap real stores).
func (f *Faulty) written(key string, removed bool, do func() error) error {
	c := f.clock
	if !c.used.Load() {
		return do()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	err := do()
	switch {
	case err != nil:
	case removed:
		delete(c.stamps, key)
	case c.step+f.skew != 0:
		c.stamps[key] = c.step + f.skew
	default:
		delete(c.stamps, key)
	}
	return err
}

// shifted returns the ModTime t of key as the store's clock reports it.
// Objects written around the Faulty (on its inner store directly) keep the
// stamp of their last write through it, if any.
func (f *Faulty) shifted(key string, t time.Time) time.Time {
	f.clock.mu.Lock()
	defer f.clock.mu.Unlock()
	return t.Add(f.clock.stamps[key])
}
