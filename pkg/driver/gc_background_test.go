package driver

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestGCSchedulerDebounce: deletions of one chain within the delay make
// one gc, with the secrets of the last; another chain gets its own; a
// delay of 0 never runs; stop cancels a pending gc.
func TestGCSchedulerDebounce(t *testing.T) {
	var mu sync.Mutex
	runs := map[gcKey][]string{}
	run := func(_ context.Context, k gcKey, s map[string]string) bool {
		mu.Lock()
		defer mu.Unlock()
		runs[k] = append(runs[k], s["v"])
		return false
	}
	// The delay is ten times the pauses between schedules, and the checks
	// poll, so a loaded machine (a pause stretched past the delay) does
	// not fail it.
	const delay = 600 * time.Millisecond
	g := newGCScheduler(delay, 0, run)
	a, b := gcKey{"t", "shop/a"}, gcKey{"t", "shop/b"}
	for i, v := range []string{"1", "2", "3"} {
		g.schedule(a, map[string]string{"v": v})
		if i < 2 {
			time.Sleep(60 * time.Millisecond) // within the delay: postpones
		}
	}
	g.schedule(b, map[string]string{"v": "b"})
	count := func(k gcKey) int {
		mu.Lock()
		defer mu.Unlock()
		return len(runs[k])
	}
	for end := time.Now().Add(10 * time.Second); (count(a) == 0 || count(b) == 0) && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(delay + 200*time.Millisecond) // a second run would come by now
	mu.Lock()
	if got := runs[a]; len(got) != 1 || got[0] != "3" {
		t.Errorf("chain a: runs %v, want one with the last secrets", got)
	}
	if got := runs[b]; len(got) != 1 {
		t.Errorf("chain b: runs %v, want one", got)
	}
	mu.Unlock()

	g.schedule(a, nil)
	g.stop()
	time.Sleep(delay + 200*time.Millisecond)
	mu.Lock()
	if len(runs[a]) != 1 {
		t.Errorf("a gc ran after stop: %v", runs[a])
	}
	mu.Unlock()
	g.schedule(a, nil) // after stop: ignored, no panic

	off := newGCScheduler(0, 0, func(context.Context, gcKey, map[string]string) bool { t.Error("gc ran with delay 0"); return false })
	off.schedule(a, nil)
	time.Sleep(50 * time.Millisecond)
	off.stop()
}

// TestGCSchedulerRetry: a run that found the chain busy runs again, at
// most maxGCRetries more times.
func TestGCSchedulerRetry(t *testing.T) {
	var mu sync.Mutex
	n := 0
	g := newGCScheduler(20*time.Millisecond, 0, func(context.Context, gcKey, map[string]string) bool {
		mu.Lock()
		defer mu.Unlock()
		n++
		return true // always busy
	})
	g.schedule(gcKey{"t", "c"}, nil)
	time.Sleep(400 * time.Millisecond)
	g.stop()
	mu.Lock()
	defer mu.Unlock()
	if n != 1+maxGCRetries {
		t.Fatalf("%d runs, want %d", n, 1+maxGCRetries)
	}
}
