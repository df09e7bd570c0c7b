package driver

import (
	"context"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/volume"
)

// TestGCSchedulerShutdown: shutdown cancels a running gc and waits until
// its run has returned (its deferred lease release ran), reports it
// stopped and a pending one dropped; a gc that ignores its cancellation
// is reported still running when the bound ends.
func TestGCSchedulerShutdown(t *testing.T) {
	running, returned := make(chan struct{}), make(chan struct{})
	g := newGCScheduler(10*time.Millisecond, 0, func(ctx context.Context, k gcKey, _ map[string]string) bool {
		close(running)
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond) // the lease's DELETE
		close(returned)
		return true
	})
	g.schedule(gcKey{"t", "a"}, nil)
	<-running
	g.delay = time.Hour
	g.schedule(gcKey{"t", "b"}, nil)
	rs := g.shutdown(context.Background())
	select {
	case <-returned:
	default:
		t.Fatal("shutdown returned before the running gc did")
	}
	want := []gcReport{{gcKey{"t", "a"}, volume.JobStopped}, {gcKey{"t", "b"}, gcDropped}}
	if len(rs) != 2 || rs[0] != want[0] || rs[1] != want[1] {
		t.Fatalf("reports %v, want %v", rs, want)
	}

	stuck := make(chan struct{})
	defer close(stuck)
	started := make(chan struct{})
	g = newGCScheduler(time.Millisecond, 0, func(context.Context, gcKey, map[string]string) bool {
		close(started)
		<-stuck
		return false
	})
	g.schedule(gcKey{"t", "c"}, nil)
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if rs := g.shutdown(ctx); len(rs) != 1 || rs[0].state != volume.JobStillRunning {
		t.Fatalf("a gc that ignores its cancellation: reports %v", rs)
	}
}
