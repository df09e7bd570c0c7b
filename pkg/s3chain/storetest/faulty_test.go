package storetest_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// With no faults, Faulty is the store it wraps.
func TestFaultySuite(t *testing.T) {
	storetest.RunSuite(t, func(*testing.T) store.Store { return storetest.NewFaulty(storetest.NewMem()) })
}

func TestFaultyFailNth(t *testing.T) {
	ctx := context.Background()
	f := storetest.NewFaulty(storetest.NewMem()).FailNth(storetest.OpPut, 2, nil)
	var errs []error
	for _, k := range []string{"a", "b", "c"} {
		errs = append(errs, f.Put(ctx, k, []byte(k)))
	}
	if errs[0] != nil || !errors.Is(errs[1], storetest.ErrInjected) || errs[2] != nil {
		t.Fatalf("Put errors = %v, want [nil ErrInjected nil]", errs)
	}
	if _, err := f.Get(ctx, "b"); !errors.Is(err, store.ErrObjectNotFound) {
		t.Fatalf("failed Put stored b anyway: %v", err)
	}
	if f.Calls(storetest.OpPut) != 3 || f.Calls(storetest.OpAny) != 4 {
		t.Fatalf("Calls(put) = %d, Calls(any) = %d; want 3, 4", f.Calls(storetest.OpPut), f.Calls(storetest.OpAny))
	}
}

func TestFaultyFailKeysTimesAfter(t *testing.T) {
	ctx := context.Background()
	mem := storetest.NewMem()
	f := storetest.NewFaulty(mem)
	f.Add(storetest.Fault{Op: storetest.OpGet, Key: func(k string) bool { return strings.HasPrefix(k, "blk/") },
		Times: 2, Err: store.ErrTransient})
	f.Add(storetest.Fault{Op: storetest.OpPut, Key: func(k string) bool { return k == "lost-ack" }, After: true})
	_ = mem.Put(ctx, "blk/1", []byte("one"))
	for i, want := range []error{store.ErrTransient, store.ErrTransient, nil} {
		if _, err := f.Get(ctx, "blk/1"); !errors.Is(err, want) && !(want == nil && err == nil) {
			t.Fatalf("Get #%d = %v, want %v", i+1, err, want)
		}
	}
	if n := f.Gets("blk/1"); n != 3 {
		t.Fatalf("Gets(blk/1) = %d, want 3", n)
	}
	if err := f.Put(ctx, "lost-ack", []byte("x")); !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("Put(lost-ack) = %v, want ErrInjected", err)
	}
	if got, err := mem.Get(ctx, "lost-ack"); err != nil || string(got) != "x" {
		t.Fatalf("After fault did not reach the inner store: %q, %v", got, err)
	}
	f.Clear()
	if err := f.Put(ctx, "lost-ack", []byte("y")); err != nil {
		t.Fatalf("Put after Clear = %v", err)
	}
}

func TestFaultyCorruptGets(t *testing.T) {
	ctx := context.Background()
	mem := storetest.NewMem()
	f := storetest.NewFaulty(mem).CorruptGets(func(k string) bool { return k == "bad" })
	orig := []byte("0123456789")
	_ = mem.Put(ctx, "bad", orig)
	_ = mem.Put(ctx, "good", orig)
	got, err := f.Get(ctx, "bad")
	if err != nil || len(got) != len(orig) || bytes.Equal(got, orig) || got[5] != orig[5]^0x10 {
		t.Fatalf("corrupt Get = %q, %v; want %q with bit 4 of byte 5 flipped", got, err, orig)
	}
	if got, _ := f.Get(ctx, "good"); !bytes.Equal(got, orig) {
		t.Fatalf("Get(good) = %q, want %q", got, orig)
	}
	if got, _ := mem.Get(ctx, "bad"); !bytes.Equal(got, orig) {
		t.Fatalf("corruption reached the stored object: %q", got)
	}
}

// Without conditional writes, Faulty passes the suite's fallback contract.
func TestFaultySuiteWithoutConditionalWrites(t *testing.T) {
	storetest.RunSuite(t, func(*testing.T) store.Store {
		return storetest.NewFaulty(storetest.NewMem()).WithoutConditionalWrites()
	}, storetest.NoAtomicCreate())
}

// Delay-only faults slow the calls they match and let them run, add up,
// and leave room for an error fault on the same call; ctx ends a delay.
func TestFaultyDelay(t *testing.T) {
	ctx := context.Background()
	f := storetest.NewFaulty(storetest.NewMem()).
		Delay(storetest.OpPutIfAbsent, func(k string) bool { return k == "slow" }, 30*time.Millisecond).
		Delay(storetest.OpAny, nil, 20*time.Millisecond)
	start := time.Now()
	if err := f.PutIfAbsent(ctx, "slow", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("delayed PutIfAbsent took %v, want >= 50ms (both delays)", d)
	}
	if got, err := f.GetMax(ctx, "slow", 1); err != nil || string(got) != "x" {
		t.Fatalf("GetMax = %q, %v", got, err)
	}
	f.FailNth(storetest.OpPutIfAbsent, 2, nil) // the second PutIfAbsent from now
	_ = f.PutIfAbsent(ctx, "a", nil)
	start = time.Now()
	if err := f.PutIfAbsent(ctx, "b", nil); !errors.Is(err, storetest.ErrInjected) || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("PutIfAbsent with a delay and an error fault = %v after %v; want ErrInjected after >= 20ms", err, time.Since(start))
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
	defer cancel()
	if _, err := f.GetMax(cctx, "slow", 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("GetMax whose ctx ends during the delay = %v, want DeadlineExceeded", err)
	}
}

// GetMax counts as OpGet (so Get faults keep firing when callers move to
// GetMax), and PutIfAbsent faults are their own: an After fault models a
// conditional PUT whose answer was lost.
func TestFaultyNewOps(t *testing.T) {
	ctx := context.Background()
	mem := storetest.NewMem()
	f := storetest.NewFaulty(mem).
		FailKeys(storetest.OpGet, func(k string) bool { return k == "bad" }, store.ErrTransient).
		Add(storetest.Fault{Op: storetest.OpPutIfAbsent, Nth: 1, After: true})
	if err := f.Put(ctx, "bad", []byte("b")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.GetMax(ctx, "bad", 10); !errors.Is(err, store.ErrTransient) || f.Gets("bad") != 1 {
		t.Fatalf("GetMax(bad) = %v with %d Gets counted; want ErrTransient, 1", err, f.Gets("bad"))
	}
	if err := f.PutIfAbsent(ctx, "lock", []byte("l")); !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("PutIfAbsent with an After fault = %v, want ErrInjected", err)
	}
	if got, err := mem.Get(ctx, "lock"); err != nil || string(got) != "l" {
		t.Fatalf("the After fault's write = %q, %v; want it stored", got, err)
	}
	if err := f.PutIfAbsent(ctx, "lock", []byte("l")); !errors.Is(err, store.ErrObjectExists) {
		t.Fatalf("second PutIfAbsent = %v, want ErrObjectExists", err)
	}
	if f.Calls(storetest.OpPutIfAbsent) != 2 || f.Calls(storetest.OpPut) != 1 {
		t.Fatalf("Calls: put-if-absent %d, put %d; want 2, 1", f.Calls(storetest.OpPutIfAbsent), f.Calls(storetest.OpPut))
	}
}
