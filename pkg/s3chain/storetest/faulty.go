package storetest

import (
	"context"
	"errors"
	"sync"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

// ErrInjected is the default error of a Fault.
var ErrInjected = errors.New("injected fault")

// Op names a Store operation for a Fault.
type Op string

// The Store operations a Fault can target.
const (
	OpAny    Op = ""
	OpPut    Op = "put"
	OpGet    Op = "get"
	OpStat   Op = "stat"
	OpDelete Op = "delete"
	OpList   Op = "list"
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
	// ErrInjected. Wrap s3chain.ErrTransient to simulate throttling or a
	// 503, s3chain.ErrObjectNotFound to simulate a lost object.
	Err error
	// After runs the operation on the inner store first and then fails,
	// as when a Put reached S3 but its answer was lost.
	After bool
	// Corrupt, for Get, returns the inner object with one bit flipped (in
	// the middle byte; an empty object gains a byte) instead of an error.
	Corrupt bool

	seen, fired int
}

// Faulty wraps a Store and injects the failures of its Faults, in the
// manner of kopia's FaultyStorage, for engine tests. It also counts the
// calls of every operation and the Gets of every key. Safe for concurrent
// use.
type Faulty struct {
	inner  s3chain.Store
	mu     sync.Mutex
	faults []*Fault
	ops    map[Op]int
	gets   map[string]int
}

var _ s3chain.Store = (*Faulty)(nil)

// NewFaulty wraps inner with no faults yet.
func NewFaulty(inner s3chain.Store) *Faulty {
	return &Faulty{inner: inner, ops: map[Op]int{}, gets: map[string]int{}}
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

// match counts the call and returns the fault that fires for it, or nil.
func (f *Faulty) match(op Op, key string) *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops[op]++
	if op == OpGet {
		f.gets[key]++
	}
	for _, ft := range f.faults {
		if (ft.Op != OpAny && ft.Op != op) || (ft.Key != nil && !ft.Key(key)) {
			continue
		}
		ft.seen++
		fire := ft.seen == ft.Nth || (ft.Nth == 0 && (ft.Times == 0 || ft.fired < ft.Times))
		if fire {
			ft.fired++
			return ft
		}
	}
	return nil
}

func (ft *Fault) err() error {
	if ft.Err != nil {
		return ft.Err
	}
	return ErrInjected
}

// run applies the fault ft (nil: none) around the inner operation do.
func run(ft *Fault, do func() error) error {
	if ft == nil {
		return do()
	}
	if ft.After {
		_ = do()
	}
	return ft.err()
}

// Put stores through inner unless a fault fires.
func (f *Faulty) Put(ctx context.Context, key string, data []byte) error {
	return run(f.match(OpPut, key), func() error { return f.inner.Put(ctx, key, data) })
}

// Get reads through inner unless a fault fires; a Corrupt fault flips a bit.
func (f *Faulty) Get(ctx context.Context, key string) ([]byte, error) {
	ft := f.match(OpGet, key)
	if ft != nil && ft.Corrupt {
		data, err := f.inner.Get(ctx, key)
		if err != nil {
			return nil, err
		}
		if len(data) == 0 {
			return []byte{0}, nil
		}
		data[len(data)/2] ^= 0x10
		return data, nil
	}
	var data []byte
	err := run(ft, func() (err error) { data, err = f.inner.Get(ctx, key); return err })
	if err != nil {
		return nil, err
	}
	return data, nil
}

// Stat reads through inner unless a fault fires.
func (f *Faulty) Stat(ctx context.Context, key string) (s3chain.ObjectInfo, error) {
	var info s3chain.ObjectInfo
	err := run(f.match(OpStat, key), func() (err error) { info, err = f.inner.Stat(ctx, key); return err })
	if err != nil {
		return s3chain.ObjectInfo{}, err
	}
	return info, nil
}

// Delete deletes through inner unless a fault fires.
func (f *Faulty) Delete(ctx context.Context, key string) error {
	return run(f.match(OpDelete, key), func() error { return f.inner.Delete(ctx, key) })
}

// List lists through inner unless a fault fires (matched on prefix).
func (f *Faulty) List(ctx context.Context, prefix string, fn func(s3chain.ObjectInfo) error) error {
	return run(f.match(OpList, prefix), func() error { return f.inner.List(ctx, prefix, fn) })
}

// String returns "faulty+" and inner's String.
func (f *Faulty) String() string { return "faulty+" + f.inner.String() }
