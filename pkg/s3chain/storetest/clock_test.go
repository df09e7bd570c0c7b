package storetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// modTimes returns key's ModTime by Stat and by List through f.
func modTimes(t *testing.T, f *storetest.Faulty, key string) (stat, list time.Time) {
	t.Helper()
	ctx := context.Background()
	oi, err := f.Stat(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	_ = f.List(ctx, key, func(o store.ObjectInfo) error {
		if o.Key == key {
			list = o.ModTime
		}
		return nil
	})
	return oi.ModTime, list
}

// near tells whether got is want shifted by d, within the test's runtime.
func near(got, want time.Time, d time.Duration) bool {
	off := got.Sub(want) - d
	return off > -time.Second && off < time.Second
}

// A step of the store's clock shifts the times of objects written after
// it, through every view, by Stat and List alike; earlier objects keep
// theirs, and a backward step shifts back.
func TestFaultyStepClock(t *testing.T) {
	ctx := context.Background()
	mem := storetest.NewMem()
	f := storetest.NewFaulty(mem)
	v := f.View()
	_ = f.Put(ctx, "before", nil)
	f.StepClock(time.Hour)
	_ = v.Put(ctx, "after", nil) // through the other view
	_ = f.PutIfAbsent(ctx, "created", nil)
	now := time.Now()
	for _, k := range []string{"before", "after", "created"} {
		want := time.Duration(0)
		if k != "before" {
			want = time.Hour
		}
		for _, view := range []*storetest.Faulty{f, v} {
			stat, list := modTimes(t, view, k)
			if !near(stat, now, want) || !near(list, now, want) {
				t.Errorf("%s: Stat %v, List %v; want about now + %v", k, stat, list, want)
			}
		}
	}
	f.StepClock(-3 * time.Hour)
	_ = f.Put(ctx, "before", nil)
	if stat, _ := modTimes(t, v, "before"); !near(stat, now, -2*time.Hour) || f.ClockShift() != -2*time.Hour {
		t.Errorf("after a backward step: %v (shift %v); want about now - 2h", stat, f.ClockShift())
	}
	if oi, _ := mem.Stat(ctx, "after"); !near(oi.ModTime, now, 0) {
		t.Errorf("the inner store's own time changed: %v", oi.ModTime)
	}
}

// A skewed gateway shifts only what is written through it, as every
// client then sees it; a delete and rewrite through another drops it.
func TestFaultySkewClock(t *testing.T) {
	ctx := context.Background()
	f := storetest.NewFaulty(storetest.NewMem())
	ahead := f.View()
	ahead.SkewClock(time.Minute)
	_ = ahead.Put(ctx, "a", nil)
	_ = f.Put(ctx, "b", nil)
	now := time.Now()
	if stat, _ := modTimes(t, f, "a"); !near(stat, now, time.Minute) {
		t.Errorf("a written through the skewed gateway: %v, want about now + 1m", stat)
	}
	if stat, _ := modTimes(t, ahead, "b"); !near(stat, now, 0) {
		t.Errorf("b written through the other: %v, want about now", stat)
	}
	_ = f.Delete(ctx, "a")
	_ = f.Put(ctx, "a", nil)
	if stat, _ := modTimes(t, ahead, "a"); !near(stat, now, 0) || ahead.ClockShift() != time.Minute || f.ClockShift() != 0 {
		t.Errorf("a rewritten through the other: %v; shifts %v, %v", stat, ahead.ClockShift(), f.ClockShift())
	}
}

// A held write lands with the clock of its landing, not of its sending.
func TestFaultyLateWriteStamp(t *testing.T) {
	ctx := context.Background()
	f := storetest.NewFaulty(storetest.NewMem())
	g := f.Hold(storetest.OpPut, nil, 1)
	done := make(chan error)
	go func() { done <- f.Put(ctx, "late", nil) }()
	awaitGate(t, g)
	f.StepClock(time.Hour)
	g.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if stat, _ := modTimes(t, f, "late"); !near(stat, time.Now(), time.Hour) {
		t.Errorf("late write: %v, want about now + 1h", stat)
	}
}
