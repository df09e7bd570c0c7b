package s3chain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// TestRestoreKillInterleavings runs restores with a checkpoint through
// random schedules of the fetch workers and the writer pool: random
// worker counts, GETs and block writes delayed at random, failed GETs and
// writes, cancellations at random points, periodic checkpoint flushes
// every few milliseconds. Invariants, checked at random instants during
// each restore (what a kill would leave) and after it returns:
//   - the checkpoint on disk claims only blocks whose write ended before an
//     fsync of the destination that succeeded (FORMAT.md §8), and each such
//     block holds the backup's bytes;
//   - at most 2 × workers block buffers are ever allocated;
//   - no write runs after Restore returned;
//   - a rerun without faults resumes: it skips every claimed block and the
//     destination is the backup, byte for byte.
//
// CHAINVOL_SCHEDULES sets the number of schedules (default 60),
// CHAINVOL_SEED the first seed.
func TestRestoreKillInterleavings(t *testing.T) {
	n, seed := testutil.Schedules(t, 60)
	t.Logf("%d schedules from seed %d (CHAINVOL_SEED=%d reproduces)", n, seed, seed)
	for _, key := range [][]byte{nil, testKey(5)} {
		c := newTestChain(t, 0, key, 8<<20-5000) // a short last block: written through the page cache
		// Text-like blocks, so that zstd blocks are decoded into the
		// second buffer, beside raw ones checked where they landed.
		text := bytes.Repeat([]byte("a restore writes while it fetches\n"), 4096)
		f, err := os.OpenFile(c.vol.path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		for off := int64(0); off+chainBS <= c.vol.size; off += 3 * chainBS {
			if _, err := f.WriteAt(text[:chainBS/2], off); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
		c.backupNext(t)
		want, err := os.ReadFile(c.vol.path)
		if err != nil {
			t.Fatal(err)
		}
		for k := range n {
			if !runRestoreKill(t, c, key, want, seed+uint64(k)) {
				t.Fatalf("schedule %d failed (CHAINVOL_SEED=%d CHAINVOL_SCHEDULES=1 replays it, encrypted: %v)", k, seed+uint64(k), key != nil)
			}
		}
	}
}

// killState is what one schedule's hooks saw.
type killState struct {
	mu       sync.Mutex
	rng      *rand.Rand
	written  map[int64]bool // writes that ended
	pending  map[int64]bool // written before the running fsync began
	durable  map[int64]bool // written before an fsync that succeeded
	active   int            // writes running
	returned bool           // Restore returned
	bad      []string
}

func (s *killState) violation(format string, a ...any) {
	s.bad = append(s.bad, fmt.Sprintf(format, a...))
}

func (s *killState) intn(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rng.IntN(n)
}

// runRestoreKill runs one schedule and reports whether its invariants held.
func runRestoreKill(t *testing.T, c *testChain, key, want []byte, seed uint64) bool {
	t.Helper()
	s := &killState{rng: rand.New(rand.NewPCG(seed, 29)), written: map[int64]bool{}, pending: map[int64]bool{}, durable: map[int64]bool{}}
	workers := 1 + s.rng.IntN(8)
	faults := s.rng.IntN(3) // 0: none, 1: failing GETs or writes, 2: a cancellation
	dir := t.TempDir()
	dest, ckpt := filepath.Join(dir, "dest"), filepath.Join(dir, "ckpt")
	st := storetest.NewFaulty(c.store)
	st.Add(storetest.Fault{Op: storetest.OpGet, Delay: time.Duration(s.rng.IntN(1500)) * time.Microsecond})
	if faults == 1 && s.rng.IntN(2) == 0 {
		st.Add(storetest.Fault{Op: storetest.OpGet, Nth: 3 + s.rng.IntN(30), Err: errors.New("connection reset")})
	}
	failAt, cancelAt := -1, -1
	if faults == 1 {
		failAt = s.rng.IntN(40)
	}
	if faults == 2 {
		cancelAt = s.rng.IntN(40)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	repo := newRepo(t, st, key)
	writes := 0
	s3chain.SetRestoreHooksForTest(repo, s3chain.RestoreHooks{
		FlushEvery: time.Duration(1+s.rng.IntN(5)) * time.Millisecond,
		Buffers: func(n int) {
			if n > 2*workers {
				s.mu.Lock()
				s.violation("%d block buffers allocated with %d workers", n, workers)
				s.mu.Unlock()
			}
		},
		Write: func(i int64) error {
			s.mu.Lock()
			if s.returned {
				s.violation("block %d written after Restore returned", i)
			}
			s.active++
			writes++
			w := writes
			sample := s.rng.IntN(6) == 0
			delay := time.Duration(s.rng.IntN(3000)) * time.Microsecond
			s.mu.Unlock()
			if sample {
				checkClaims(s, ckpt, dest, want)
			}
			time.Sleep(delay)
			if w == cancelAt {
				cancel()
			}
			if w == failAt {
				s.mu.Lock()
				s.active--
				s.mu.Unlock()
				return errors.New("injected write error")
			}
			return nil
		},
		Written: func(i int64) {
			s.mu.Lock()
			s.active--
			s.written[i] = true
			s.mu.Unlock()
		},
		BeforeSync: func() {
			s.mu.Lock()
			s.pending = map[int64]bool{}
			for i := range s.written {
				s.pending[i] = true
			}
			s.mu.Unlock()
		},
		AfterSync: func(err error) {
			s.mu.Lock()
			if err == nil {
				for i := range s.pending {
					s.durable[i] = true
				}
			}
			s.mu.Unlock()
		},
	})
	o := s3chain.RestoreOptions{Chain: c.name, BackupID: "latest", Destination: dest, Workers: workers, Checkpoint: ckpt}
	_, _, err := repo.Restore(ctx, o)
	s.mu.Lock()
	s.returned = true
	if s.active != 0 {
		s.violation("%d writes running after Restore returned", s.active)
	}
	s.mu.Unlock()
	if err == nil && faults != 0 && writes >= 40 {
		s.violation("restore succeeded through its faults (fail at %d, cancel at %d, %d writes)", failAt, cancelAt, writes)
	}
	claimed := checkClaims(s, ckpt, dest, want)
	// Resume without faults.
	_, rst, rerr := newRepo(t, c.store, key).Restore(context.Background(), o)
	got, _ := os.ReadFile(dest)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case rerr != nil:
		s.violation("resumed restore: %v", rerr)
	case !bytes.Equal(got, want):
		s.violation("resumed restore: destination differs from the backup")
	case err != nil && rst.SkippedBlocks < claimed:
		s.violation("resume skipped %d blocks, the checkpoint claimed %d", rst.SkippedBlocks, claimed)
	}
	for _, b := range s.bad {
		t.Errorf("seed %d (workers %d, faults %d, first run: %v): %s", seed, workers, faults, err, b)
	}
	return len(s.bad) == 0
}

// checkClaims reads the checkpoint at ckpt (absent: claims nothing) and
// checks every block it claims against s.durable and want; it returns the
// number claimed.
func checkClaims(s *killState, ckpt, dest string, want []byte) int {
	data, err := os.ReadFile(ckpt)
	if err != nil {
		return 0
	}
	var cf struct {
		Done []byte `json:"done"`
	}
	if err := json.Unmarshal(data, &cf); err != nil {
		s.mu.Lock()
		s.violation("checkpoint unreadable: %v", err)
		s.mu.Unlock()
		return 0
	}
	f, err := os.Open(dest)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	buf := make([]byte, chainBS)
	for i := range int64(len(cf.Done) * 8) {
		if cf.Done[i/8]&(1<<(i%8)) == 0 {
			continue
		}
		n++
		s.mu.Lock()
		ok := s.durable[i]
		s.mu.Unlock()
		off := i * chainBS
		end := min(off+chainBS, int64(len(want)))
		k, _ := f.ReadAt(buf[:end-off], off)
		if !ok || k != int(end-off) || !bytes.Equal(buf[:k], want[off:end]) {
			s.mu.Lock()
			s.violation("checkpoint claims block %d: durable %v, bytes match %v", i, ok, bytes.Equal(buf[:k], want[off:end]))
			s.mu.Unlock()
		}
	}
	return n
}
