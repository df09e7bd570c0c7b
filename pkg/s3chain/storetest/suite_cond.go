package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// testGetMax checks the bound at its edge: an object of size S is returned
// under a bound of S (and more) and refused, naming key, size and bound,
// under S-1.
func testGetMax(t *testing.T, s store.Store) {
	ctx := context.Background()
	for _, size := range []int{1, 1000, 3<<20 + 17} {
		key := fmt.Sprintf("gm/obj%d", size)
		data := randBytes(uint64(200+size), size)
		mustPut(t, s, key, data)
		for _, bound := range []int64{int64(size), int64(size) + 1, math.MaxInt64} {
			got, err := s.GetMax(ctx, key, bound)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("GetMax(%q, %d) of %d bytes = %d bytes, %v; want the object", key, bound, size, len(got), err)
			}
		}
		_, err := s.GetMax(ctx, key, int64(size)-1)
		if !errors.Is(err, store.ErrObjectTooLarge) {
			t.Fatalf("GetMax(%q, %d) of %d bytes = %v, want ErrObjectTooLarge", key, size-1, size, err)
		}
		for _, want := range []string{key, strconv.Itoa(size), strconv.Itoa(size - 1)} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("ErrObjectTooLarge message %q does not name %q (key, size and bound)", err, want)
			}
		}
	}
	mustPut(t, s, "gm/empty", []byte{})
	for _, bound := range []int64{0, -1} {
		if got, err := s.GetMax(ctx, "gm/empty", bound); err != nil || got == nil || len(got) != 0 {
			t.Fatalf("GetMax(empty, %d) = %v (nil: %t), %v; want a non-nil empty slice", bound, got, got == nil, err)
		}
	}
	if _, err := s.GetMax(ctx, "gm/obj1", -1); !errors.Is(err, store.ErrObjectTooLarge) {
		t.Fatalf("GetMax of 1 byte with bound -1 = %v, want ErrObjectTooLarge", err)
	}
	// The returned slice is the caller's.
	got, _ := s.GetMax(ctx, "gm/obj1000", 1000)
	got[0] ^= 0xff
	mustGetEqual(t, s, "gm/obj1000", randBytes(1200, 1000))
}

// testPutIfAbsent: the first PutIfAbsent creates, a second fails with
// ErrObjectExists and leaves the first bytes, and so does one after Put;
// after Delete the key can be created again.
func testPutIfAbsent(t *testing.T, s store.Store) {
	ctx := context.Background()
	first, second := randBytes(300, 70000), randBytes(301, 5)
	if err := s.PutIfAbsent(ctx, "pia/lock", first); err != nil {
		t.Fatalf("PutIfAbsent of a new key = %v, want nil", err)
	}
	mustGetEqual(t, s, "pia/lock", first)
	if err := s.PutIfAbsent(ctx, "pia/lock", second); !errors.Is(err, store.ErrObjectExists) {
		t.Fatalf("second PutIfAbsent = %v, want ErrObjectExists", err)
	}
	mustGetEqual(t, s, "pia/lock", first)
	if err := s.PutIfAbsent(ctx, "pia/lock", first); !errors.Is(err, store.ErrObjectExists) {
		t.Fatalf("PutIfAbsent of the same bytes again = %v, want ErrObjectExists", err)
	}

	mustPut(t, s, "pia/put", []byte("by Put"))
	if err := s.PutIfAbsent(ctx, "pia/put", second); !errors.Is(err, store.ErrObjectExists) {
		t.Fatalf("PutIfAbsent over a Put object = %v, want ErrObjectExists", err)
	}
	mustGetEqual(t, s, "pia/put", []byte("by Put"))

	if err := s.Delete(ctx, "pia/lock"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx, "pia/lock", second); err != nil {
		t.Fatalf("PutIfAbsent after Delete = %v, want nil", err)
	}
	mustGetEqual(t, s, "pia/lock", second)

	if err := s.PutIfAbsent(ctx, "pia/deep/er/empty", []byte{}); err != nil {
		t.Fatalf("PutIfAbsent of an empty object under new prefixes = %v", err)
	}
	mustGetEqual(t, s, "pia/deep/er/empty", []byte{})
	if keys, _ := listKeys(t, s, ""); !slices.Equal(keys, []string{"pia/deep/er/empty", "pia/lock", "pia/put"}) {
		t.Fatalf("List after PutIfAbsent = %q; want only the three objects (no probes, no temporaries)", keys)
	}
}

// testPutIfAbsentRace: racing writers of one key, each with its own bytes,
// several rounds: exactly one wins each round, the others get
// ErrObjectExists, and the key holds the winner's bytes.
func testPutIfAbsentRace(t *testing.T, s store.Store) {
	const writers, rounds, size = 8, 6, 32 << 10
	ctx := context.Background()
	for r := range rounds {
		key := fmt.Sprintf("race/%d/lock", r)
		errs := make([]error, writers)
		var start, wg sync.WaitGroup
		start.Add(1)
		for w := range writers {
			wg.Go(func() {
				start.Wait()
				errs[w] = s.PutIfAbsent(ctx, key, randBytes(uint64(r*100+w), size))
			})
		}
		start.Done()
		wg.Wait()
		winner := -1
		for w, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: writers %d and %d both won PutIfAbsent(%q)", r, winner, w, key)
			case err == nil:
				winner = w
			case !errors.Is(err, store.ErrObjectExists):
				t.Fatalf("round %d: writer %d: PutIfAbsent = %v, want nil or ErrObjectExists", r, w, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no writer won PutIfAbsent(%q): %v", r, key, errs)
		}
		mustGetEqual(t, s, key, randBytes(uint64(r*100+winner), size))
	}
}

// testPutIfAbsentNotAtomic is the fallback contract of a store without
// atomic create: PutIfAbsent answers ErrNotAtomic for new and existing
// keys, alone and concurrently, every time, and writes nothing; the other
// operations keep working.
func testPutIfAbsentNotAtomic(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustPut(t, s, "na/existing", []byte("old"))
	for i := range 3 {
		for _, key := range []string{"na/new", "na/existing"} {
			if err := s.PutIfAbsent(ctx, key, []byte("new")); !errors.Is(err, store.ErrNotAtomic) {
				t.Fatalf("PutIfAbsent(%q) #%d = %v, want ErrNotAtomic", key, i+1, err)
			}
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for w := range errs {
		wg.Go(func() { errs[w] = s.PutIfAbsent(ctx, "na/race", []byte{byte(w)}) })
	}
	wg.Wait()
	for w, err := range errs {
		if !errors.Is(err, store.ErrNotAtomic) {
			t.Fatalf("concurrent PutIfAbsent #%d = %v, want ErrNotAtomic", w, err)
		}
	}
	for _, key := range []string{"na/new", "na/race"} {
		if _, err := s.Stat(ctx, key); !errors.Is(err, store.ErrObjectNotFound) {
			t.Fatalf("PutIfAbsent answered ErrNotAtomic but wrote %q (Stat = %v)", key, err)
		}
	}
	mustGetEqual(t, s, "na/existing", []byte("old"))
	if keys, _ := listKeys(t, s, ""); !slices.Equal(keys, []string{"na/existing"}) {
		t.Fatalf("List = %q, want [na/existing]", keys)
	}
}
