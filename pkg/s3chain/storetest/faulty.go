package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// ErrInjected is the default error of a Fault.
var ErrInjected = errors.New("injected fault")

// Op names a Store operation for a Fault.
type Op string

// The Store operations a Fault can target. OpGet covers Get and GetMax
// (Get is GetMax with no bound); OpPutIfAbsent is separate from OpPut.
const (
	OpAny         Op = ""
	OpPut         Op = "put"
	OpPutIfAbsent Op = "put-if-absent"
	OpGet         Op = "get"
	OpStat        Op = "stat"
	OpDelete      Op = "delete"
	OpList        Op = "list"
	// OpSweepTemps is store.TempSweeper's SweepTemps (key ""), only
	// called when the inner store has it.
	OpSweepTemps Op = "sweep-temps"
)

// Fault is one injected failure rule of a Faulty store. A call matches
// when its operation is Op (OpAny: every operation) and Key is nil or
// returns true for its key (the prefix, for List).
type Fault struct {
	Op  Op
	Key func(key string) bool
	// Nth fires the fault on the Nth matching call only (1-based, counted
	// from when the fault was added); 0 fires it on every matching call.
	Nth int
	// Times, with Nth == 0, stops the fault after it fired that many times;
	// 0 means without end.
	Times int
	// Err is returned instead of the operation's result; nil means
	// ErrInjected. Wrap store.ErrTransient to simulate throttling or a
	// 503, store.ErrObjectNotFound to simulate a lost object.
	Err error
	// After runs the operation on the inner store first and then fails,
	// as when a Put reached S3 but its answer was lost.
	After bool
	// Corrupt, for Get, returns the inner object with one bit flipped (in
	// the middle byte; an empty object gains a byte) instead of an error.
	Corrupt bool
	// Delay waits this long (or until ctx ends, which fails the call with
	// ctx's error) before the call reaches the inner store. A fault with
	// only Delay set (no Err, After or Corrupt) lets the call run after
	// the wait and does not decide it: the delays of all such faults that
	// fire add up, and an error fault may still fire on the same call.
	Delay time.Duration
	// Gate holds the call, after any Delay, just before it reaches the
	// inner store until the test releases it (see Gate: a held write lands
	// even if its caller gave up). A fault with only Gate (and Delay) set
	// does not decide the call, like a delay-only one; the first such gate
	// that fires holds it. With Err or After the call is held and then
	// fails as they say.
	Gate *Gate

	seen, fired int
}

// Faulty wraps a Store and injects the failures and delays of its Faults,
// in the manner of kopia's FaultyStorage, for engine tests; with
// WithoutConditionalWrites it is a store without atomic create. It also
// counts the calls of every operation and the Gets (and GetMaxes) of
// every key. Gates pause calls between an actor's check and its effect;
// StepClock and SkewClock shift the object times the store reports; View
// makes another client of the same store, with faults of its own. Safe for
// concurrent use.
type Faulty struct {
	inner  store.Store
	mu     sync.Mutex
	faults []*Fault
	ops    map[Op]int
	gets   map[string]int
	noCond bool // PutIfAbsent answers store.ErrNotAtomic

	clock *storeClock   // shared with the views
	skew  time.Duration // this gateway's own shift; guarded by clock.mu
}

var (
	_ store.Store       = (*Faulty)(nil)
	_ store.TempSweeper = (*Faulty)(nil)
)

// NewFaulty wraps inner with no faults yet.
func NewFaulty(inner store.Store) *Faulty {
	return &Faulty{inner: inner, ops: map[Op]int{}, gets: map[string]int{}, clock: newStoreClock()}
}

// Add installs f and returns the Faulty, for chaining. The first fault
// (in order added) that fires decides a call.
func (f *Faulty) Add(fault Fault) *Faulty {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, &fault)
	return f
}

// FailNth makes the nth call (1-based) of op fail with err (nil:
// ErrInjected), once.
func (f *Faulty) FailNth(op Op, n int, err error) *Faulty {
	return f.Add(Fault{Op: op, Nth: n, Err: err})
}

// FailKeys makes every call of op whose key matches fail with err (nil:
// ErrInjected).
func (f *Faulty) FailKeys(op Op, match func(key string) bool, err error) *Faulty {
	return f.Add(Fault{Op: op, Key: match, Err: err})
}

// CorruptGets makes every Get of a key that matches return corrupted bytes.
func (f *Faulty) CorruptGets(match func(key string) bool) *Faulty {
	return f.Add(Fault{Op: OpGet, Key: match, Corrupt: true})
}

// Delay makes every call of op whose key matches (nil: every key) wait d
// before it runs; see Fault.Delay.
func (f *Faulty) Delay(op Op, match func(key string) bool, d time.Duration) *Faulty {
	return f.Add(Fault{Op: op, Key: match, Delay: d})
}

// Hold makes the nth call (1-based, from now; 0: every call) of op whose
// key matches (nil: every key) wait at a new gate, which it returns.
func (f *Faulty) Hold(op Op, match func(key string) bool, nth int) *Gate {
	g := NewGate()
	f.Add(Fault{Op: op, Key: match, Nth: nth, Gate: g})
	return g
}

// WithoutConditionalWrites makes the store behave like an S3 server that
// ignores If-None-Match: every PutIfAbsent answers store.ErrNotAtomic
// and writes nothing (faults on OpPutIfAbsent still fire first). It
// survives Clear.
func (f *Faulty) WithoutConditionalWrites() *Faulty {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noCond = true
	return f
}

// Clear removes all faults; the counters stay.
func (f *Faulty) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = nil
}

// Calls returns how many times op was called (OpAny: all operations),
// faulted calls included.
func (f *Faulty) Calls(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if op == OpAny {
		n := 0
		for _, c := range f.ops {
			n += c
		}
		return n
	}
	return f.ops[op]
}

// Gets returns how many times Get was called for key.
func (f *Faulty) Gets(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets[key]
}

// match counts the call and returns the fault that decides it (nil: none),
// the total wait of the faults that fire and the gate that holds the call
// (nil: none).
func (f *Faulty) match(op Op, key string) (*Fault, time.Duration, *Gate) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops[op]++
	if op == OpGet {
		f.gets[key]++
	}
	var delay time.Duration
	var gate *Gate
	for _, ft := range f.faults {
		if (ft.Op != OpAny && ft.Op != op) || (ft.Key != nil && !ft.Key(key)) {
			continue
		}
		ft.seen++
		fire := ft.seen == ft.Nth || (ft.Nth == 0 && (ft.Times == 0 || ft.fired < ft.Times))
		if !fire {
			continue
		}
		ft.fired++
		if gate == nil {
			gate = ft.Gate
		}
		if ft.passive() {
			delay += ft.Delay
			continue
		}
		return ft, delay + ft.Delay, gate
	}
	return nil, delay, gate
}

// passive tells a fault that only slows or holds a call from one that
// decides it.
func (ft *Fault) passive() bool {
	return (ft.Delay > 0 || ft.Gate != nil) && ft.Err == nil && !ft.After && !ft.Corrupt
}

func (ft *Fault) err() error {
	if ft.Err != nil {
		return ft.Err
	}
	return ErrInjected
}

// call matches a call of op on key, waits its delay, passes its gate and
// applies the deciding fault around the inner operation do. body is the
// data of a Put (nil for other operations): a held write keeps a copy, as
// a request on the wire does, so its caller may reuse the buffer.
func (f *Faulty) call(ctx context.Context, op Op, key string, body *[]byte, do func(context.Context) error) error {
	ft, delay, gate := f.match(op, key)
	if err := sleep(ctx, delay); err != nil {
		return err
	}
	if gate != nil && body != nil {
		*body = slices.Clone(*body)
	}
	write := body != nil || op == OpDelete
	return gate.pass(ctx, op, key, write, func(ctx context.Context) error {
		return apply(ft, func() error { return do(ctx) })
	})
}

// apply applies the fault ft (nil: none) around the inner operation do.
func apply(ft *Fault, do func() error) error {
	if ft == nil {
		return do()
	}
	if ft.After {
		_ = do()
	}
	return ft.err()
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("injected delay of %v: %w", d, ctx.Err())
	case <-t.C:
		return nil
	}
}

// Put stores through inner unless a fault fires.
func (f *Faulty) Put(ctx context.Context, key string, data []byte) error {
	return f.call(ctx, OpPut, key, &data, func(ctx context.Context) error {
		return f.written(key, false, func() error { return f.inner.Put(ctx, key, data) })
	})
}

// PutIfAbsent stores through inner unless a fault fires, or answers
// store.ErrNotAtomic after WithoutConditionalWrites.
func (f *Faulty) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return f.call(ctx, OpPutIfAbsent, key, &data, func(ctx context.Context) error {
		f.mu.Lock()
		noCond := f.noCond
		f.mu.Unlock()
		if noCond {
			if err := check(ctx, key); err != nil {
				return err
			}
			return fmt.Errorf("faulty put-if-absent %q: %w: conditional writes turned off", key, store.ErrNotAtomic)
		}
		return f.written(key, false, func() error { return f.inner.PutIfAbsent(ctx, key, data) })
	})
}

// Get is GetMax with no bound.
func (f *Faulty) Get(ctx context.Context, key string) ([]byte, error) {
	return f.GetMax(ctx, key, math.MaxInt64)
}

// GetMax reads through inner unless a fault fires; a Corrupt fault flips
// a bit.
func (f *Faulty) GetMax(ctx context.Context, key string, maxBytes int64) ([]byte, error) {
	ft, delay, gate := f.match(OpGet, key)
	if err := sleep(ctx, delay); err != nil {
		return nil, err
	}
	var data []byte
	err := gate.pass(ctx, OpGet, key, false, func(ctx context.Context) (err error) {
		if ft != nil && ft.Corrupt {
			if data, err = f.inner.GetMax(ctx, key, maxBytes); err == nil {
				data = corrupt(data)
			}
			return err
		}
		return apply(ft, func() (err error) { data, err = f.inner.GetMax(ctx, key, maxBytes); return err })
	})
	if err != nil {
		return nil, err
	}
	return data, nil
}

// corrupt flips a bit in the middle byte of data; an empty object gains a
// byte.
func corrupt(data []byte) []byte {
	if len(data) == 0 {
		return []byte{0}
	}
	data[len(data)/2] ^= 0x10
	return data
}

// Stat reads through inner unless a fault fires; the ModTime is the
// store clock's (StepClock).
func (f *Faulty) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	var info store.ObjectInfo
	err := f.call(ctx, OpStat, key, nil, func(ctx context.Context) (err error) { info, err = f.inner.Stat(ctx, key); return err })
	if err != nil {
		return store.ObjectInfo{}, err
	}
	info.ModTime = f.shifted(key, info.ModTime)
	return info, nil
}

// Delete deletes through inner unless a fault fires.
func (f *Faulty) Delete(ctx context.Context, key string) error {
	return f.call(ctx, OpDelete, key, nil, func(ctx context.Context) error {
		return f.written(key, true, func() error { return f.inner.Delete(ctx, key) })
	})
}

// List lists through inner unless a fault fires (matched on prefix); the
// ModTimes are the store clock's (StepClock).
func (f *Faulty) List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	return f.call(ctx, OpList, prefix, nil, func(ctx context.Context) error {
		return f.inner.List(ctx, prefix, func(oi store.ObjectInfo) error {
			oi.ModTime = f.shifted(oi.Key, oi.ModTime)
			return fn(oi)
		})
	})
}

// SweepTemps sweeps inner's temporary files unless a fault fires. Over a
// store without the capability (Mem) it does nothing and is no call: no
// counted request, no fault, as if Faulty had no such method.
func (f *Faulty) SweepTemps(ctx context.Context, olderThan time.Duration, dryRun bool) (files int, bytes int64, err error) {
	ts, ok := f.inner.(store.TempSweeper)
	if !ok {
		return 0, 0, nil
	}
	// Not a request that could land late: a held sweep whose caller gave up
	// is dropped, like a read.
	err = f.call(ctx, OpSweepTemps, "", nil, func(ctx context.Context) (err error) {
		files, bytes, err = ts.SweepTemps(ctx, olderThan, dryRun)
		return err
	})
	return files, bytes, err
}

// String returns "faulty+" and inner's String.
func (f *Faulty) String() string { return "faulty+" + f.inner.String() }
