package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// RunSuite runs the conformance suite for store.Store against the stores
// made by newStore, which must return a fresh, empty store for every call
// (each subtest gets its own). It checks the rules written on the Store
// interface: whole-object put/get/overwrite, Stat sizes, ErrObjectNotFound
// for missing keys, idempotent Delete, ErrInvalidKey, lexical List order
// with prefixes, List stopping on a callback error, ctx cancellation,
// concurrent Puts that never tear an object, GetMax's bound
// (ErrObjectTooLarge) and PutIfAbsent's create-once (ErrObjectExists, one
// winner of a race). A store that cannot create atomically is run with
// NoAtomicCreate, which replaces the PutIfAbsent cases by the fallback
// contract: ErrNotAtomic every time, nothing written.
func RunSuite(t *testing.T, newStore func(t *testing.T) store.Store, opts ...SuiteOption) {
	var cfg suiteConfig
	for _, o := range opts {
		o(&cfg)
	}
	cases := []suiteCase{
		{"PutGet", testPutGet},
		{"Overwrite", testOverwrite},
		{"Stat", testStat},
		{"Missing", testMissing},
		{"Delete", testDelete},
		{"InvalidKeys", testInvalidKeys},
		{"ListOrder", testListOrder},
		{"ListCallbackStops", testListCallbackStops},
		{"ListWhileDeleting", testListWhileDeleting},
		{"ContextCancelled", testContextCancelled},
		{"ConcurrentPuts", testConcurrentPuts},
		{"GetMax", testGetMax},
	}
	if cfg.noAtomicCreate {
		cases = append(cases, suiteCase{"PutIfAbsentNotAtomic", testPutIfAbsentNotAtomic})
	} else {
		cases = append(cases, []suiteCase{
			{"PutIfAbsent", testPutIfAbsent},
			{"PutIfAbsentRace", testPutIfAbsentRace},
		}...)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

type suiteCase struct {
	name string
	fn   func(*testing.T, store.Store)
}

// SuiteOption adjusts RunSuite to a kind of store.
type SuiteOption func(*suiteConfig)

type suiteConfig struct {
	noAtomicCreate bool
}

// NoAtomicCreate declares that the stores under test have no atomic
// create (an S3 server that ignores If-None-Match): RunSuite then checks
// that PutIfAbsent answers store.ErrNotAtomic consistently and writes
// nothing, instead of its create-once cases.
func NoAtomicCreate() SuiteOption {
	return func(c *suiteConfig) { c.noAtomicCreate = true }
}

// randBytes returns n reproducible pseudo-random bytes for seed.
func randBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func mustPut(t *testing.T, s store.Store, key string, data []byte) {
	t.Helper()
	if err := s.Put(context.Background(), key, data); err != nil {
		t.Fatalf("Put(%q, %d bytes): %v", key, len(data), err)
	}
}

func mustGetEqual(t *testing.T, s store.Store, key string, want []byte) {
	t.Helper()
	got, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if sha256.Sum256(got) != sha256.Sum256(want) || len(got) != len(want) {
		t.Fatalf("Get(%q) = %d bytes sha256 %x, want %d bytes sha256 %x",
			key, len(got), sha256.Sum256(got), len(want), sha256.Sum256(want))
	}
}

func listKeys(t *testing.T, s store.Store, prefix string) ([]string, map[string]int64) {
	t.Helper()
	var keys []string
	sizes := map[string]int64{}
	err := s.List(context.Background(), prefix, func(info store.ObjectInfo) error {
		keys = append(keys, info.Key)
		sizes[info.Key] = info.Size
		return nil
	})
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	return keys, sizes
}

func testPutGet(t *testing.T, s store.Store) {
	big := randBytes(1, 3<<20+17) // odd size, above minio-go's small-upload paths
	mustPut(t, s, "chains/v1/big.blk", big)
	mustGetEqual(t, s, "chains/v1/big.blk", big)

	mustPut(t, s, "empty", []byte{})
	got, err := s.Get(context.Background(), "empty")
	if err != nil || len(got) != 0 {
		t.Fatalf("Get(empty) = %d bytes, %v; want 0 bytes, nil", len(got), err)
	}

	// The store must not keep or hand out the caller's buffer.
	buf := []byte("0123456789")
	mustPut(t, s, "alias", buf)
	buf[0] = 'X'
	got, _ = s.Get(context.Background(), "alias")
	got[1] = 'Y'
	mustGetEqual(t, s, "alias", []byte("0123456789"))
}

func testOverwrite(t *testing.T, s store.Store) {
	mustPut(t, s, "m/manifest", randBytes(2, 5000))
	v2 := randBytes(3, 1234) // shorter: no tail of v1 may survive
	mustPut(t, s, "m/manifest", v2)
	mustGetEqual(t, s, "m/manifest", v2)
	info, err := s.Stat(context.Background(), "m/manifest")
	if err != nil || info.Size != 1234 {
		t.Fatalf("Stat after overwrite = %+v, %v; want size 1234", info, err)
	}
}

func testStat(t *testing.T, s store.Store) {
	before := time.Now().Add(-time.Hour) // S3 servers round to seconds; clocks drift
	mustPut(t, s, "s/obj", randBytes(4, 4097))
	info, err := s.Stat(context.Background(), "s/obj")
	if err != nil {
		t.Fatal(err)
	}
	if info.Key != "s/obj" || info.Size != 4097 {
		t.Fatalf("Stat = %+v, want key s/obj size 4097", info)
	}
	if info.ModTime.Before(before) || info.ModTime.After(time.Now().Add(time.Hour)) {
		t.Fatalf("Stat ModTime %v is not within an hour of now", info.ModTime)
	}
}

func testMissing(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustPut(t, s, "dir/child", []byte("x"))
	for _, key := range []string{"nope", "dir/nope", "dir", "dir/child/grandchild", "nope/deeper"} {
		if _, err := s.Get(ctx, key); !errors.Is(err, store.ErrObjectNotFound) {
			t.Errorf("Get(%q) error = %v, want ErrObjectNotFound", key, err)
		}
		if _, err := s.Stat(ctx, key); !errors.Is(err, store.ErrObjectNotFound) {
			t.Errorf("Stat(%q) error = %v, want ErrObjectNotFound", key, err)
		}
		if _, err := s.GetMax(ctx, key, 1<<20); !errors.Is(err, store.ErrObjectNotFound) {
			t.Errorf("GetMax(%q) error = %v, want ErrObjectNotFound", key, err)
		}
	}
}

func testDelete(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.Delete(ctx, "never/existed"); err != nil {
		t.Fatalf("Delete of a missing key = %v, want nil", err)
	}
	mustPut(t, s, "d/a", []byte("a"))
	mustPut(t, s, "d/b", []byte("b"))
	if err := s.Delete(ctx, "d/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "d/a"); !errors.Is(err, store.ErrObjectNotFound) {
		t.Fatalf("Get after Delete = %v, want ErrObjectNotFound", err)
	}
	if err := s.Delete(ctx, "d/a"); err != nil {
		t.Fatalf("second Delete = %v, want nil", err)
	}
	mustGetEqual(t, s, "d/b", []byte("b"))
	if keys, _ := listKeys(t, s, ""); !slices.Equal(keys, []string{"d/b"}) {
		t.Fatalf("List after Delete = %q, want [d/b]", keys)
	}
	// A key can be written again under a prefix Delete emptied.
	if err := s.Delete(ctx, "d/b"); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, "d/c", []byte("c"))
	mustGetEqual(t, s, "d/c", []byte("c"))
}

func testInvalidKeys(t *testing.T, s store.Store) {
	ctx := context.Background()
	for _, key := range []string{"", "/abs", "../up", "a/../b", "a//b", "a/", "./a", "sp ace", "per%cent", "uni\u00e9", "back\\slash"} {
		if err := s.Put(ctx, key, []byte("x")); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", key, err)
		}
		if _, err := s.Get(ctx, key); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Get(%q) = %v, want ErrInvalidKey", key, err)
		}
		if _, err := s.GetMax(ctx, key, 10); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("GetMax(%q) = %v, want ErrInvalidKey", key, err)
		}
		// Before ErrNotAtomic too: a bad key is the caller's bug everywhere.
		if err := s.PutIfAbsent(ctx, key, []byte("x")); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("PutIfAbsent(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
	if keys, _ := listKeys(t, s, ""); len(keys) != 0 {
		t.Fatalf("invalid Puts left objects %q", keys)
	}
}

func testListOrder(t *testing.T, s store.Store) {
	// '-' and '.' sort before '/', digits before upper before lower case:
	// a store that walks directories by name gets these wrong.
	// No key is also a prefix of another ("a" and "a/b"): file stores
	// cannot hold both.
	keys := []string{"l/a-c", "l/a.b", "l/a/b", "l/a/c/d", "l/a0", "l/B", "l/b", "l/0", "l2/x", "k/z"}
	for i, k := range keys {
		mustPut(t, s, k, randBytes(uint64(10+i), 10+i))
	}
	want := slices.Clone(keys)
	slices.Sort(want)
	got, sizes := listKeys(t, s, "")
	if !slices.Equal(got, want) {
		t.Fatalf("List(\"\") = %q\nwant %q", got, want)
	}
	for i, k := range keys {
		if sizes[k] != int64(10+i) {
			t.Errorf("List size of %q = %d, want %d", k, sizes[k], 10+i)
		}
	}
	for prefix, want := range map[string][]string{
		"l/":   {"l/0", "l/B", "l/a-c", "l/a.b", "l/a/b", "l/a/c/d", "l/a0", "l/b"},
		"l/a":  {"l/a-c", "l/a.b", "l/a/b", "l/a/c/d", "l/a0"},
		"l/a/": {"l/a/b", "l/a/c/d"},
		"l":    {"l/0", "l/B", "l/a-c", "l/a.b", "l/a/b", "l/a/c/d", "l/a0", "l/b", "l2/x"},
		"none": nil,
	} {
		if got, _ := listKeys(t, s, prefix); !slices.Equal(got, want) {
			t.Errorf("List(%q) = %q\nwant %q", prefix, got, want)
		}
	}
}

func testListCallbackStops(t *testing.T, s store.Store) {
	for i := range 5 {
		mustPut(t, s, fmt.Sprintf("c/%d", i), []byte{byte(i)})
	}
	stop := errors.New("stop here")
	var seen []string
	err := s.List(context.Background(), "c/", func(info store.ObjectInfo) error {
		seen = append(seen, info.Key)
		if len(seen) == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || !slices.Equal(seen, []string{"c/0", "c/1"}) {
		t.Fatalf("List = %v after %q; want the callback's error after [c/0 c/1]", err, seen)
	}
}

func testListWhileDeleting(t *testing.T, s store.Store) {
	var want []string
	for i := range 12 {
		want = append(want, fmt.Sprintf("g/%02d/obj", i))
		mustPut(t, s, want[i], []byte("x"))
	}
	var seen []string
	err := s.List(context.Background(), "g/", func(info store.ObjectInfo) error {
		seen = append(seen, info.Key)
		return s.Delete(context.Background(), info.Key)
	})
	if err != nil || !slices.Equal(seen, want) {
		t.Fatalf("List deleting each key = %v, saw %q; want nil and %q", err, seen, want)
	}
	if left, _ := listKeys(t, s, ""); len(left) != 0 {
		t.Fatalf("left after deleting all: %q", left)
	}
}

func testContextCancelled(t *testing.T, s store.Store) {
	mustPut(t, s, "x/present", []byte("p"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	check := func(op string, err error) {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled ctx = %v, want context.Canceled", op, err)
		}
	}
	check("Put", s.Put(ctx, "x/new", []byte("n")))
	_, err := s.Get(ctx, "x/present")
	check("Get", err)
	_, err = s.GetMax(ctx, "x/present", 10)
	check("GetMax", err)
	check("PutIfAbsent", s.PutIfAbsent(ctx, "x/new", []byte("n")))
	_, err = s.Stat(ctx, "x/present")
	check("Stat", err)
	check("Delete", s.Delete(ctx, "x/present"))
	check("List", s.List(ctx, "", func(store.ObjectInfo) error { return nil }))
	if _, err := s.Stat(context.Background(), "x/new"); !errors.Is(err, store.ErrObjectNotFound) {
		t.Errorf("cancelled Put stored the object anyway (Stat = %v)", err)
	}
	mustGetEqual(t, s, "x/present", []byte("p"))
}

func testConcurrentPuts(t *testing.T, s store.Store) {
	const writers, perWriter, size = 8, 4, 64 << 10
	versions := make([][]byte, writers)
	for w := range versions {
		versions[w] = randBytes(uint64(100+w), size)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, writers*(perWriter+2))
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				key := fmt.Sprintf("p/w%d/%d", w, i)
				if err := s.Put(ctx, key, randBytes(uint64(w*100+i), 1000+i)); err != nil {
					errs <- err
				}
			}
			// Everyone overwrites one key while others read it.
			if err := s.Put(ctx, "p/shared", versions[w]); err != nil {
				errs <- err
			}
			if got, err := s.Get(ctx, "p/shared"); err == nil && !isOneOf(got, versions) {
				errs <- fmt.Errorf("torn read of p/shared: %d bytes matching no writer", len(got))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for w := range writers {
		for i := range perWriter {
			mustGetEqual(t, s, fmt.Sprintf("p/w%d/%d", w, i), randBytes(uint64(w*100+i), 1000+i))
		}
	}
	got, err := s.Get(ctx, "p/shared")
	if err != nil || !isOneOf(got, versions) {
		t.Fatalf("final p/shared: %d bytes, %v; want one writer's whole version", len(got), err)
	}
	if keys, _ := listKeys(t, s, "p/"); len(keys) != writers*perWriter+1 {
		t.Fatalf("List(p/) = %d keys, want %d: %q", len(keys), writers*perWriter+1, keys)
	}
}

func isOneOf(b []byte, versions [][]byte) bool {
	return slices.ContainsFunc(versions, func(v []byte) bool { return bytes.Equal(b, v) })
}
