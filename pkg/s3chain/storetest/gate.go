package storetest

import (
	"context"
	"fmt"
	"sync"
)

// Gate holds the calls of the faults that name it (Fault.Gate) just
// before they reach the inner store, until the test releases them: a pause
// between an actor's check and its effect, during which the test runs the
// other actors. A held call has already left its client, as a request on
// the wire has: its caller waits while its ctx lives, but a caller whose
// ctx ends first gets ctx's error at once (the client gave up on the
// answer) while a held write (Put, PutIfAbsent, Delete) still lands on the
// inner store when released, whatever became of its ctx: a late-landing
// request. A held read whose caller gave up is dropped. Safe for
// concurrent use.
type Gate struct {
	mu      sync.Mutex
	open    bool
	held    []*heldCall   // not yet released, in arrival order
	keys    []string      // the key of every call held so far, in order
	awaited int           // how many of keys Await returned
	arrival chan struct{} // closed (and replaced) at each arrival
	// unlanded counts the held calls not yet run (or dropped), whoever
	// released them: Release waits for it, so that a call another
	// goroutine's ReleaseNext took has landed too when Release returns.
	unlanded sync.WaitGroup
}

type heldCall struct {
	release chan struct{} // closed by the test
	landed  chan struct{} // closed once the call ran (or was dropped)
}

// NewGate returns a closed gate: it holds every call its faults pass it.
func NewGate() *Gate { return &Gate{arrival: make(chan struct{})} }

// Await waits for the next call the gate holds (each arrival is returned
// once, in order) and returns its key (the prefix, for List). It fails
// with ctx's error when ctx ends first, so a test can also stop waiting
// once the actor it watches finished without making the call.
func (g *Gate) Await(ctx context.Context) (string, error) {
	for {
		g.mu.Lock()
		if g.awaited < len(g.keys) {
			k := g.keys[g.awaited]
			g.awaited++
			g.mu.Unlock()
			return k, nil
		}
		ch := g.arrival
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return "", fmt.Errorf("storetest: no call reached the gate: %w", ctx.Err())
		}
	}
}

// Held returns how many calls wait at the gate now.
func (g *Gate) Held() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.held)
}

// Arrived returns how many calls the gate has held so far.
func (g *Gate) Arrived() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.keys)
}

// ReleaseNext lets the oldest held call run and returns once it has run on
// the inner store; false when no call is held. The gate stays closed.
func (g *Gate) ReleaseNext() bool {
	g.mu.Lock()
	if len(g.held) == 0 {
		g.mu.Unlock()
		return false
	}
	h := g.held[0]
	g.held = g.held[1:]
	g.mu.Unlock()
	close(h.release)
	<-h.landed
	return true
}

// Release opens the gate for good (later calls pass without waiting) and
// lets the held calls run one at a time in arrival order, each landing
// before the next is released; it returns once all have run, also those
// a concurrent ReleaseNext or Release took (a test that checks the store
// after Release must never meet a write still on its way).
func (g *Gate) Release() {
	g.mu.Lock()
	g.open = true
	g.mu.Unlock()
	for g.ReleaseNext() {
	}
	g.unlanded.Wait()
}

// landed marks h as run (or dropped).
func (g *Gate) landed(h *heldCall) {
	close(h.landed)
	g.unlanded.Done()
}

// enter holds a call of key, or returns nil when the gate is open.
func (g *Gate) enter(key string) *heldCall {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open {
		return nil
	}
	h := &heldCall{release: make(chan struct{}), landed: make(chan struct{})}
	g.unlanded.Add(1)
	g.held = append(g.held, h)
	g.keys = append(g.keys, key)
	close(g.arrival)
	g.arrival = make(chan struct{})
	return h
}

// pass runs the call run (write: it changes the store) through gate g (nil:
// at once); see Gate for what a held call does.
func (g *Gate) pass(ctx context.Context, op Op, key string, write bool, run func(context.Context) error) error {
	var h *heldCall
	if g != nil {
		h = g.enter(key)
	}
	if h == nil {
		return run(ctx)
	}
	land := func() error {
		defer g.landed(h)
		if write {
			return run(context.WithoutCancel(ctx)) // it left the client: it lands
		}
		return run(ctx)
	}
	select {
	case <-h.release:
		return land()
	case <-ctx.Done():
	}
	select {
	case <-h.release:
		return land()
	default:
	}
	go func() {
		<-h.release
		if write {
			_ = land()
			return
		}
		g.landed(h) // nobody waits for this read's answer any more
	}()
	return fmt.Errorf("storetest: held %s %q given up by its caller: %w", op, key, ctx.Err())
}
