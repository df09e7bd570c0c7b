package lazy

import (
	"context"
	"sync"
	"time"
)

// narrowTo is how many hydration fetches may be in flight while reads
// want blocks (priority): few, so that hydration never stops (no bound or
// starvation rule needed) while a read's fetch shares the target, the
// cores and the data file's disk with two background fetches, not with a
// full set of workers. Two rather than one: in one run each (session 10,
// load 2-4) two kept the 1 MiB read at 29-31 ms and brought a staged
// hydration from 1.17-1.19x a full restore to 1.11-1.12x.
const narrowTo = 2

// demandLinger is how long hydration stays narrowed after the last read
// that waited for a block (or the disk) got it: 50 ms, far above a
// chain's gap on a quiet machine (a FUSE and loop round trip, under 1 ms)
// and short enough that a mount's or a read's end widens hydration soon. A filesystem reads a file as a chain of
// dependent block reads (directory, inode table, extents, data), each
// issued after the one before returned, through a FUSE and loop round
// trip: hydration widening in those gaps started a full set of fetches
// before each link of the chain, which then waited behind all of them
// (docs/BENCHMARKS.md "Instant restore (issue 27)").
const demandLinger = 50 * time.Millisecond

// priority puts the fetches reads wait for before hydration's: while a
// read or a partial write waits for an unmarked block or for the disk
// (readCache), and for linger after the last one did, hydration holds at
// most narrowTo fetches in flight (Hydrate's workers take a slot,
// background, before each block). A speed rule only: what is fetched,
// and when it is marked, is as without it. Its zero value is ready
// (linger demandLinger).
type priority struct {
	mu      sync.Mutex
	waiting int64         // reads and partial writes waiting for an unmarked block or the disk
	last    time.Time     // when waiting last fell to 0
	running int           // hydration fetches holding a slot
	changed chan struct{} // closed at every change of the above (nil: none waits)
	// linger is demandLinger unless a test sets it (before any use).
	linger time.Duration
}

// Add adds d (±1) to the reads waiting for a block and returns their
// count (atomic.Int64's shape: the callers count a wait in and out).
func (p *priority) Add(d int64) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waiting += d
	if p.waiting == 0 {
		p.last = time.Now()
	}
	p.wake()
	return p.waiting
}

// Load returns the reads waiting for a block.
func (p *priority) Load() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiting
}

// wake tells the workers waiting in background that the state changed.
// Called with mu held.
func (p *priority) wake() {
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

// narrowFor returns how long from now hydration stays narrowed: the
// linger left since the last wait ended, or forever (-1) while a read
// waits; 0 when it is not narrowed. Called with mu held.
func (p *priority) narrowFor(now time.Time) time.Duration {
	if p.waiting > 0 {
		return -1
	}
	linger := p.linger
	if linger == 0 {
		linger = demandLinger
	}
	if p.last.IsZero() {
		return 0
	}
	return max(0, linger-now.Sub(p.last))
}

// background returns once a hydration worker may start a fetch, with the
// function that gives its slot back (after the fetch), or ok false when
// ctx ended first.
func (p *priority) background(ctx context.Context) (release func(), ok bool) {
	for {
		p.mu.Lock()
		left := p.narrowFor(time.Now())
		if left == 0 || p.running < narrowTo {
			p.running++
			p.mu.Unlock()
			return p.release, true
		}
		if p.changed == nil {
			p.changed = make(chan struct{})
		}
		changed := p.changed
		p.mu.Unlock()
		if !p.await(ctx, changed, left) {
			return nil, false
		}
	}
}

// await waits for changed, for left (when positive) or for ctx, and
// reports whether ctx is still live.
func (p *priority) await(ctx context.Context, changed <-chan struct{}, left time.Duration) bool {
	var expired <-chan time.Time
	if left > 0 {
		t := time.NewTimer(left)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-changed:
	case <-expired:
	case <-ctx.Done():
		return false
	}
	return true
}

// release gives a hydration fetch's slot back.
func (p *priority) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running--
	p.wake()
}
