package lazy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/chainvol/chainvol/internal/tick"
)

// recordEvery is how often Hydrate writes the record while it runs: a
// crash loses at most this much hydration (the blocks are fetched again,
// the same verified bytes).
const recordEvery = time.Second

// Hydrate fetches every unmarked block of a writable image into its data
// file, workers at a time (≥ 1), lowest block first; on-demand reads and
// writes join it through the blocks' single flight and come first (while
// they wait it narrows: priority), and it never writes a marked block. A fetch failing with other than a Permanent error is
// tried again after a backoff (1 s doubling to 30 s) until ctx ends. The
// record is written at most every recordEvery and once at the end: after
// a restart, OpenWritable resumes from it. It returns nil once every
// block is marked and recorded (Complete). Errors: ErrReadOnly, ctx's, a
// Permanent or local (data file) fetch error, the record's.
func (im *Image) Hydrate(ctx context.Context, workers int) error {
	if im.rw == nil {
		return ErrReadOnly
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	todo := make(chan int64)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range todo {
				release, ok := im.demand.background(ctx)
				if !ok {
					continue // ended: feed stops, todo closes
				}
				err := im.hydrateBlock(ctx, i)
				release()
				if err != nil {
					cancel(err)
				}
			}
		}()
	}
	// A failed flush is tried again at the next tick; the final Flush
	// below reports it.
	stopRecord := tick.Every(recordEvery, func() { _ = im.Flush() })
	im.feed(ctx, todo)
	close(todo)
	wg.Wait()
	stopRecord()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	if !im.Complete() {
		return fmt.Errorf("lazy image: hydration ended with blocks unmarked") // a bug: feed sends every unmarked block
	}
	return im.Flush()
}

// feed sends the unmarked blocks to todo until ctx ends.
func (im *Image) feed(ctx context.Context, todo chan<- int64) {
	for i := range int64(len(im.have)) {
		im.mu.Lock()
		have := im.have[i]
		im.mu.Unlock()
		if have {
			continue
		}
		select {
		case todo <- i:
		case <-ctx.Done():
			return
		}
	}
}

// hydrateBlock fetches block i unless it is marked, retrying transient
// failures with a backoff until ctx ends.
func (im *Image) hydrateBlock(ctx context.Context, i int64) error {
	wait := time.Second
	for {
		err := im.underBlock(ctx, i, func() error { return im.fetchRetrying(ctx, i, time.Time{}) })
		if err == nil || ctx.Err() != nil {
			return ctx.Err()
		}
		if im.opts.Permanent(err) || errors.Is(err, errWrongLength) || errors.Is(err, errCache) {
			return fmt.Errorf("hydrate block %d: %w", i, err)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
		wait = min(2*wait, 30*time.Second)
	}
}
