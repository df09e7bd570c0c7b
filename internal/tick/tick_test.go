package tick

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestEvery: f runs at the interval, and not once stop has returned, even
// when stop came while f was running.
func TestEvery(t *testing.T) {
	var n atomic.Int32
	var running atomic.Bool
	stop := Every(time.Millisecond, func() {
		running.Store(true)
		n.Add(1)
		time.Sleep(5 * time.Millisecond)
		running.Store(false)
	})
	for n.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	stop()
	if running.Load() {
		t.Fatal("f still runs after stop returned")
	}
	after := n.Load()
	time.Sleep(20 * time.Millisecond)
	if got := n.Load(); got != after {
		t.Fatalf("f ran %d times after stop", got-after)
	}
}
