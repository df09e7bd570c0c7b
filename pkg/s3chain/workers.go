package s3chain

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// eachByWorkers hands the items, in order, to n workers made by
// newWorker, each called once in its own goroutine so that it can own
// buffers for all the items it takes (the backup's block buffers, the
// restore's aligned object buffers). The first error cancels ctx for all
// and is returned; ctx's error if it ends first.
func eachByWorkers[T any](ctx context.Context, n int, items []T, newWorker func() func(ctx context.Context, item T) error) error {
	g, ctx := errgroup.WithContext(ctx)
	next := make(chan T)
	g.Go(func() error {
		defer close(next)
		for _, it := range items {
			select {
			case next <- it:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	for range n {
		g.Go(func() error {
			work := newWorker()
			for it := range next {
				if err := work(ctx, it); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}
