package storetest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// awaitGate waits (at most 5 s) for the next call at g.
func awaitGate(t *testing.T, g *storetest.Gate) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	k, err := g.Await(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A held Put reaches the store only when released, and its caller waits
// for it; only the Nth matching call is held.
func TestGateHoldsNth(t *testing.T) {
	ctx := context.Background()
	mem := storetest.NewMem()
	f := storetest.NewFaulty(mem)
	g := f.Hold(storetest.OpPut, func(k string) bool { return strings.HasPrefix(k, "b/") }, 2)
	if err := f.Put(ctx, "b/1", []byte("1")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- f.Put(ctx, "b/2", []byte("2")) }()
	if k := awaitGate(t, g); k != "b/2" || g.Held() != 1 {
		t.Fatalf("held %q (%d held), want b/2 alone", k, g.Held())
	}
	if _, err := mem.Stat(ctx, "b/2"); !errors.Is(err, store.ErrObjectNotFound) {
		t.Fatalf("held Put reached the store: %v", err)
	}
	if err := f.Put(ctx, "b/3", []byte("3")); err != nil { // the 3rd passes
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("held Put returned %v before its release", err)
	default:
	}
	if !g.ReleaseNext() {
		t.Fatal("ReleaseNext found nothing held")
	}
	if err := <-done; err != nil {
		t.Fatalf("released Put: %v", err)
	}
	if got, err := mem.Get(ctx, "b/2"); err != nil || string(got) != "2" {
		t.Fatalf("released Put stored %q, %v", got, err)
	}
	if g.ReleaseNext() || g.Arrived() != 1 {
		t.Fatalf("ReleaseNext with nothing held, or %d arrivals; want 1", g.Arrived())
	}
}

// A held write whose caller gives up (ctx ends) answers ctx's error at
// once and still lands, with the bytes it was sent, when released; a held
// read whose caller gave up never runs.
func TestGateAbandonedWriteLandsLate(t *testing.T) {
	mem := storetest.NewMem()
	f := storetest.NewFaulty(mem)
	g := f.Hold(storetest.OpAny, nil, 0)
	ctx, cancel := context.WithCancel(context.Background())
	buf := []byte("sent")
	done := make(chan error)
	go func() { done <- f.Put(ctx, "k", buf) }()
	awaitGate(t, g)
	listed := make(chan struct{}, 1)
	go func() {
		_ = f.List(ctx, "", func(store.ObjectInfo) error { listed <- struct{}{}; return nil })
	}()
	awaitGate(t, g)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned held Put = %v, want context.Canceled", err)
	}
	copy(buf, "XXXX") // the caller reuses its buffer
	if _, err := mem.Stat(context.Background(), "k"); !errors.Is(err, store.ErrObjectNotFound) {
		t.Fatalf("abandoned Put landed before its release: %v", err)
	}
	g.Release()
	if got, err := mem.Get(context.Background(), "k"); err != nil || string(got) != "sent" {
		t.Fatalf("late-landing Put stored %q, %v; want %q", got, err, "sent")
	}
	select {
	case <-listed:
		t.Fatal("an abandoned List ran its callback")
	default:
	}
	if err := f.Delete(context.Background(), "k"); err != nil { // the gate is open now
		t.Fatal(err)
	}
	if mem.Len() != 0 {
		t.Fatal("Delete through the opened gate did not run")
	}
}

// A gate with Err holds the call, then fails it without reaching the
// store; Await gives up when its ctx ends.
func TestGateWithError(t *testing.T) {
	ctx := context.Background()
	mem := storetest.NewMem()
	f := storetest.NewFaulty(mem)
	g := storetest.NewGate()
	f.Add(storetest.Fault{Op: storetest.OpDelete, Gate: g, Err: store.ErrTransient})
	_ = mem.Put(ctx, "k", []byte("v"))
	done := make(chan error)
	go func() { done <- f.Delete(ctx, "k") }()
	awaitGate(t, g)
	g.Release()
	if err := <-done; !errors.Is(err, store.ErrTransient) {
		t.Fatalf("held failing Delete = %v, want ErrTransient", err)
	}
	if _, err := mem.Stat(ctx, "k"); err != nil {
		t.Fatalf("failing Delete reached the store: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, err := storetest.NewGate().Await(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Await on an idle gate = %v, want DeadlineExceeded", err)
	}
}

// slowPut is a Mem whose Puts take d: a write that is slow to land.
type slowPut struct {
	*storetest.Mem
	d time.Duration
}

func (s *slowPut) Put(ctx context.Context, key string, data []byte) error {
	time.Sleep(s.d)
	return s.Mem.Put(ctx, key, data)
}

// Release returns only once every held call has landed, also one that a
// concurrent ReleaseNext took first: the interleaving tests check the
// store right after Release, and a write still on its way then (a late
// manifest) was reported as left behind.
func TestGateReleaseWaitsForEveryLanding(t *testing.T) {
	mem := storetest.NewMem()
	f := storetest.NewFaulty(&slowPut{Mem: mem, d: 200 * time.Millisecond})
	g := f.Hold(storetest.OpPut, nil, 0)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = f.Put(ctx, "k", []byte("v")) }()
	awaitGate(t, g)
	cancel() // its caller gives up: the write lands on its own
	go g.ReleaseNext()
	for g.Held() > 0 {
		time.Sleep(time.Millisecond)
	}
	g.Release() // finds nothing held, and waits for the other's landing
	if _, err := mem.Stat(context.Background(), "k"); err != nil {
		t.Fatalf("Release returned before a held Put landed: %v", err)
	}
}
