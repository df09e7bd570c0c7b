package driver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

func TestJobSet(t *testing.T) {
	s := newJobSet()
	release := make(chan struct{})
	j := s.start("k", "restore of x", func(ctx context.Context, j *job) error {
		j.progress(s3chain.Progress{DoneBytes: 1 << 20, TotalBytes: 4 << 20})
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
	if wait(ctx, j) {
		t.Fatal("wait reported a running job as finished")
	}
	if msg := j.message(); !strings.Contains(msg, "1.0 MiB of 4.0 MiB (25%)") {
		t.Fatalf("message %q", msg)
	}
	close(release)
	if !wait(context.Background(), j) {
		t.Fatal("wait without deadline returned before the job ended")
	}
	if done, err := j.finished(); !done || err == nil || err.Error() != "boom" {
		t.Fatalf("finished = %v, %v", done, err)
	}
	s.forget("k")
	j2 := s.start("k", "again", func(ctx context.Context, _ *job) error { <-ctx.Done(); return ctx.Err() })
	s.stopAll()
	if done, err := j2.finished(); !done || !errors.Is(err, context.Canceled) || s.get("k") != nil {
		t.Fatalf("after stopAll: %v %v %v", done, err, s.get("k"))
	}
}
