package lazy

import (
	"bytes"
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// crowdSource is a faultSource that counts, while the test says so
// (counting), the hydration fetches (of blocks below chain) that started
// while another hydration fetch was in flight.
type crowdSource struct {
	*faultSource
	chain int64 // blocks from chain on are the test's reads'

	mu              sync.Mutex
	hydrating       int  // hydration fetches in flight
	counting        bool // count the starts below
	starts, crowded int  // hydration fetches started while counting; of them, started beside another
}

func (s *crowdSource) ReadBlock(ctx context.Context, i int64, objBuf, buf []byte) ([]byte, int64, error) {
	if i < s.chain {
		s.mu.Lock()
		if s.counting {
			s.starts++
			if s.hydrating >= narrowTo {
				s.crowded++
			}
		}
		s.hydrating++
		s.mu.Unlock()
		defer func() { s.mu.Lock(); s.hydrating--; s.mu.Unlock() }()
	}
	return s.faultSource.ReadBlock(ctx, i, objBuf, buf)
}

func (s *crowdSource) count(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counting = on
}

// A filesystem's read of a file is a chain of dependent block reads
// (directory, inode, extent, data), each issued once the one before
// returned. While such a chain runs, hydration keeps at most narrowTo
// fetches in flight, also across the gaps between the chain's reads and
// past the old yield's 100 ms: no hydration fetch starts beside another,
// and hydration still goes on (it is narrowed, not stopped). Counts, not
// times: the source's delay only makes fetches overlap.
func TestHydrationNarrowsUnderAReadChain(t *testing.T) {
	const blocks, bs, chainLen = 512, 1 << 12, 30
	s := &crowdSource{faultSource: newFaultSource(t, blocks*bs, bs), chain: blocks - chainLen}
	s.readDelay = 10 * time.Millisecond
	im, _, _ := newWritable(t, s.faultSource, 5*time.Second)
	im.src = s
	im.demand.linger = time.Minute // the chain's gaps, however slow the machine, are within it
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	herr := make(chan error, 1)
	go func() { herr <- im.Hydrate(ctx, 8) }()
	for s.reads.Load() < 16 { // hydration runs its 8 workers
		time.Sleep(time.Millisecond)
	}
	buf := make([]byte, 100)
	for k := range int64(chainLen) {
		i := s.chain + k
		if _, err := im.ReadAt(buf, i*bs+7); err != nil || !bytes.Equal(buf, s.data[i*bs+7:i*bs+107]) {
			t.Fatalf("chain read %d: %v", k, err)
		}
		if k == 2 { // the fetches hydration had in flight when the chain began have started (and ended)
			s.count(true)
		}
	}
	s.count(false)
	cancel()
	if err := <-herr; !errors.Is(err, context.Canceled) {
		t.Fatalf("hydration: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Logf("during the chain: %d hydration fetches started, %d beside another", s.starts, s.crowded)
	if s.crowded > 0 {
		t.Errorf("%d of %d hydration fetches started during a read chain beside another hydration fetch, want none (narrowTo %d)",
			s.crowded, s.starts, narrowTo)
	}
	if s.starts == 0 {
		t.Error("hydration stopped during the read chain, want it narrowed")
	}
}

// A read of the block a hydration worker is fetching waits for that
// fetch: the block is fetched once.
func TestReadJoinsHydrationFetch(t *testing.T) {
	s := newFaultSource(t, 4<<14, 1<<14)
	s.readDelay = 300 * time.Millisecond
	im, _, _ := newWritable(t, s, 5*time.Second)
	herr := make(chan error, 1)
	go func() { herr <- im.Hydrate(context.Background(), 1) }()
	for s.reads.Load() < 1 { // hydration leads block 0
		time.Sleep(time.Millisecond)
	}
	buf := make([]byte, 1000)
	if _, err := im.ReadAt(buf, 10); err != nil || !bytes.Equal(buf, s.data[10:1010]) {
		t.Fatalf("read during hydration's fetch of its block: %v", err)
	}
	if err := <-herr; err != nil {
		t.Fatal(err)
	}
	if n := s.readsOf(0); n != 1 {
		t.Fatalf("block 0 fetched %d times, want 1 (the reader waited for hydration's fetch)", n)
	}
}

// A read of a hydrated block that is not in the page cache (hydration
// writes with O_DIRECT) takes the disk path of readCache: it returns the
// block's bytes, in reads that straddle blocks too, and asks the kernel
// for the whole block once (warm).
func TestReadOfHydratedBlockFromDisk(t *testing.T) {
	const bs = 1 << 16
	s := newFaultSource(t, 6*bs, bs, 4)
	im, data, _ := newWritable(t, s, 5*time.Second)
	if err := im.Hydrate(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	evict(t, data)
	for _, r := range [][2]int64{{bs + 10, 100}, {2*bs - 50, 4000}, {4*bs - 7, 20}, {3 * bs, 2 * bs}} {
		buf := make([]byte, r[1])
		if _, err := im.ReadAt(buf, r[0]); err != nil || !bytes.Equal(buf, s.data[r[0]:r[0]+r[1]]) {
			t.Fatalf("read of %d bytes at %d from the disk: %v, or wrong bytes", r[1], r[0], err)
		}
	}
	im.mu.Lock()
	defer im.mu.Unlock()
	for _, i := range []int64{1, 2, 3} {
		if !im.warmed[i] {
			t.Errorf("block %d read from the disk was not warmed: the read did not take the disk path", i)
		}
	}
	if im.warmed[4] {
		t.Error("zero block 4 was warmed")
	}
}

// evict drops path's pages from the page cache (written back first).
func evict(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
}
