package volume

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

func TestJobSet(t *testing.T) {
	s := newJobSet("")
	release := make(chan struct{})
	j := s.start("k", "restore of x", func(ctx context.Context, j *Job) error {
		j.Progress(s3chain.Progress{DoneBytes: 1 << 20, TotalBytes: 4 << 20})
		select {
		case <-release:
			return errors.New("boom")
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if again := s.start("k", "other", nil); again != j {
		t.Fatal("a second start with the same key made a new job")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1100*time.Millisecond)
	defer cancel()
	if Wait(ctx, j) {
		t.Fatal("wait reported a running job as finished")
	}
	if msg := j.Message(); !strings.Contains(msg, "1.0 MiB of 4.0 MiB (25%)") {
		t.Fatalf("message %q", msg)
	}
	close(release)
	if !Wait(context.Background(), j) {
		t.Fatal("wait without deadline returned before the job ended")
	}
	if done, err := j.Finished(); !done || err == nil || err.Error() != "boom" {
		t.Fatalf("finished = %v, %v", done, err)
	}
	s.forget("k")
	j2 := s.start("k", "again", func(ctx context.Context, _ *Job) error { <-ctx.Done(); return ctx.Err() })
	s.stopAll()
	if done, err := j2.Finished(); !done || !errors.Is(err, context.Canceled) || s.get("k") != nil {
		t.Fatalf("after stopAll: %v %v %v", done, err, s.get("k"))
	}
}

// TestJobWaiting: a job paused for its target says "waiting for target:
// CAUSE" in its message until its next progress report; before any
// report it says it reads the manifests.
func TestJobWaiting(t *testing.T) {
	j := &Job{what: "restore of x", start: time.Now()}
	if msg := j.Message(); !strings.Contains(msg, "reading the backup's manifests") {
		t.Errorf("message before any progress: %q", msg)
	}
	j.Progress(s3chain.Progress{DoneBytes: 1 << 20, TotalBytes: 4 << 20})
	j.SetWaiting(errors.New("dial tcp: connection refused"), 2*time.Second)
	if msg := j.Message(); !strings.Contains(msg, "waiting for target: dial tcp: connection refused (next try in 2s)") ||
		!strings.Contains(msg, "1.0 MiB of 4.0 MiB") {
		t.Errorf("message while waiting: %q", msg)
	}
	j.Progress(s3chain.Progress{DoneBytes: 2 << 20, TotalBytes: 4 << 20})
	if msg := j.Message(); strings.Contains(msg, "waiting") {
		t.Errorf("message after progress resumed: %q", msg)
	}
}

// TestJobGated: a gated job does not run while its starter answers
// without waiting (a deadline within wait's margin); it runs once wait
// blocks, or once open is called; stopping it before is Canceled.
func TestJobGated(t *testing.T) {
	s := newJobSet("")
	ran := make(chan struct{}, 1)
	j := s.startGated("k", "restore of x", func(context.Context, *Job) error { ran <- struct{}{}; return nil })
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond) // within the 1 s margin
	defer cancel()
	if Wait(ctx, j) {
		t.Fatal("wait with an expired margin reported the job ended")
	}
	select {
	case <-ran:
		t.Fatal("the gated job ran before anyone waited for it")
	case <-time.After(100 * time.Millisecond):
	}
	if !Wait(context.Background(), j) {
		t.Fatal("wait without deadline returned before the job ended")
	}
	<-ran

	g := s.startGated("g", "restore of y", func(context.Context, *Job) error { return errors.New("ran") })
	s.stop("g")
	if done, err := g.Finished(); !done || !errors.Is(err, context.Canceled) {
		t.Errorf("gated job stopped before it opened: done %v, err %v", done, err)
	}
}
