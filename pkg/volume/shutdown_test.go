package volume

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestJobSetShutdown: shutdown cancels a running job and waits for it to
// return (its deferred cleanup has run), reports it stopped, a job that
// ignores its cancellation still running once the bound ends, and refuses
// every later job with ErrStopping without running it.
func TestJobSetShutdown(t *testing.T) {
	s := newJobSet("")
	cleaned := make(chan struct{})
	s.start("a", "backup upload", func(ctx context.Context, j *Job) error {
		j.SetSubject("snap-a")
		j.SetBackup("t:c@1")
		defer close(cleaned) // a lease release
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond)
		return ctx.Err()
	})
	stuck := make(chan struct{})
	defer close(stuck)
	s.start("b", "restore of t:c@1", func(ctx context.Context, j *Job) error { <-stuck; return nil })
	time.Sleep(20 * time.Millisecond) // let job a record its subject
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	rs := s.shutdown(ctx)
	select {
	case <-cleaned:
	default:
		t.Fatal("shutdown returned before the cancelled job's cleanup ran")
	}
	if len(rs) != 2 || rs[0].Key != "a" || rs[0].State != JobStopped || rs[0].Volume != "snap-a" || rs[0].Backup != "t:c@1" ||
		rs[1].Key != "b" || rs[1].State != JobStillRunning {
		t.Fatalf("reports %+v", rs)
	}
	ran := false
	j := s.start("c", "backup upload", func(context.Context, *Job) error { ran = true; return nil })
	if done, err := j.Finished(); !done || !errors.Is(err, ErrStopping) || !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("a job started after shutdown: finished %v, err %v, ran %v", done, err, ran)
	}
}

// TestCancelled: once ctx is done, an error that does not wrap its
// cancellation (a cut connection) is made to; before, errors pass as they are.
func TestCancelled(t *testing.T) {
	cut := errors.New("connection reset by peer")
	ctx, cancel := context.WithCancel(context.Background())
	if err := cancelled(ctx, cut); err != cut {
		t.Fatalf("before the cancel: %v", err)
	}
	cancel()
	if err := cancelled(ctx, cut); !errors.Is(err, context.Canceled) || !errors.Is(err, cut) {
		t.Fatalf("after the cancel: %v", err)
	}
	if err := cancelled(ctx, nil); err != nil {
		t.Fatalf("a success after the cancel: %v", err)
	}
}
