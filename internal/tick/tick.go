// Package tick calls a function at a fixed interval in a goroutine of its
// own until stopped: the progress reports of a hydration (pkg/volume),
// chainvolctl's progress bar and log lines, and hack/testreport's progress
// lines. It is a leaf: it imports only the standard library.
package tick

import (
	"sync"
	"time"
)

// Every calls f every d (a time.Ticker: a slow f drops ticks, it does not
// queue them) until stop is called. stop returns once f has returned and
// will not be called again, so that what the caller does after it never
// runs beside f; call it once. d must be positive.
func Every(d time.Duration, f func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				f()
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
