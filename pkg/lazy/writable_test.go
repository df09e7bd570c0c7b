package lazy

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// newWritable opens a writable image of s over a fresh sparse data file
// (as an instant restore makes it) and returns it with the data file's
// and the record's paths.
func newWritable(t *testing.T, s *faultSource, retryFor time.Duration) (*Image, string, string) {
	t.Helper()
	dir := t.TempDir()
	data, rec := filepath.Join(dir, "data"), filepath.Join(dir, "hydration", "vol.bits")
	f, err := os.Create(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(s.SizeBytes()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return reopen(t, s, data, rec, retryFor), data, rec
}

func reopen(t *testing.T, s *faultSource, data, rec string, retryFor time.Duration) *Image {
	t.Helper()
	im, err := OpenWritable(s, data, rec, Options{RetryFor: retryFor, Permanent: func(err error) bool { return errors.Is(err, errCorrupt) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { im.Close() })
	return im
}

func (s *faultSource) readsOf(i int64) int64 {
	c, ok := s.perBlock.Load(i)
	if !ok {
		return 0
	}
	return c.(*atomic.Int64).Load()
}

// A read hydrates its block into the data file; after Flush the record
// marks it, and a reopened image reads it without a fetch.
func TestWritableReadHydratesDataFile(t *testing.T) {
	s := newFaultSource(t, 8<<16, 1<<16, 5)
	im, data, rec := newWritable(t, s, time.Second)
	buf := make([]byte, 100)
	if _, err := im.ReadAt(buf, 2<<16+7); err != nil || !bytes.Equal(buf, s.data[2<<16+7:2<<16+107]) {
		t.Fatalf("read: %v", err)
	}
	if _, err := im.ReadAt(buf, 5<<16); err != nil || !bytes.Equal(buf, make([]byte, 100)) || s.readsOf(5) != 0 {
		t.Fatalf("zero block: %v, %d fetches", err, s.readsOf(5))
	}
	onDisk, _ := os.ReadFile(data)
	if !bytes.Equal(onDisk[2<<16:3<<16], s.data[2<<16:3<<16]) {
		t.Fatal("the read block is not in the data file")
	}
	if err := im.Flush(); err != nil {
		t.Fatal(err)
	}
	im.Close()
	im2 := reopen(t, s, data, rec, time.Second)
	if _, err := im2.ReadAt(buf, 2<<16); err != nil || s.readsOf(2) != 1 {
		t.Fatalf("reopened: %v, block fetched %d times, want 1", err, s.readsOf(2))
	}
	if done, _ := im2.Hydrated(); done != 2<<16 {
		t.Fatalf("hydrated %d bytes, want the read block and the zero block", done)
	}
}

// A whole-block write is never fetched; a partial one fetches and merges.
func TestWritableWrites(t *testing.T) {
	s := newFaultSource(t, 4<<16, 1<<16)
	im, data, _ := newWritable(t, s, time.Second)
	whole := bytes.Repeat([]byte{7}, 1<<16)
	if _, err := im.WriteAt(whole, 1<<16); err != nil {
		t.Fatal(err)
	}
	if _, err := im.WriteAt([]byte("hello"), 3<<16+10); err != nil {
		t.Fatal(err)
	}
	if s.readsOf(1) != 0 || s.readsOf(3) != 1 {
		t.Fatalf("fetches: whole-written %d (want 0), partly written %d (want 1)", s.readsOf(1), s.readsOf(3))
	}
	want := bytes.Clone(s.data)
	copy(want[1<<16:], whole)
	copy(want[3<<16+10:], "hello")
	got := make([]byte, len(want))
	if _, err := im.ReadAt(got, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back: %v", err)
	}
	onDisk, _ := os.ReadFile(data)
	if !bytes.Equal(onDisk, want) {
		t.Fatal("the data file is not the backup plus the writes")
	}
	if _, err := im.WriteAt([]byte("x"), 4<<16); !errors.Is(err, ErrBeyondEnd) {
		t.Fatalf("write past the end: %v, want ErrBeyondEnd", err)
	}
}

// Hydration with concurrent writes and reads: every read returns the
// backup's bytes or the writes', and the data file ends as the backup plus
// the writes; hydration never overwrote a write.
func TestHydrateWithConcurrentWrites(t *testing.T) {
	const bs, blocks = 1 << 14, 256
	s := newFaultSource(t, bs*blocks-100, bs, 3, 40, 41)
	s.readDelay = time.Millisecond
	im, data, rec := newWritable(t, s, time.Second)
	want := bytes.Clone(s.data)
	var wmu sync.Mutex // want's writers
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for w := range 4 { // writer w owns the blocks ≡ w mod 4
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range 60 {
				// Regions of two blocks (a write may cross their boundary);
				// writer w owns the regions ≡ w mod 4.
				reg := int64(r.IntN(blocks/8)*4 + w)
				start, end := reg*2*bs, min((reg+1)*2*bs, s.SizeBytes())
				off := start + r.Int64N(end-start)
				n := 1 + r.Int64N(end-off)
				if r.IntN(4) == 0 { // a whole block, sometimes
					off = start + bs*r.Int64N(2)
					n = min(bs, s.SizeBytes()-off)
				}
				p := make([]byte, n)
				for i := range p {
					p[i] = byte(r.Uint32())
				}
				if _, err := im.WriteAt(p, off); err != nil {
					t.Error(err)
					return
				}
				wmu.Lock()
				copy(want[off:], p)
				wmu.Unlock()
			}
		}()
	}
	wg.Add(1)
	go func() { // reads run through hydration and writes (-race; bytes checked in the other tests)
		defer wg.Done()
		buf := make([]byte, 3000)
		for range 200 {
			off := rand.Int64N(s.SizeBytes() - 3000)
			if _, err := im.ReadAtContext(ctx, buf, off); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	herr := make(chan error, 1)
	go func() { herr <- im.Hydrate(ctx, 3) }()
	wg.Wait()
	if err := <-herr; err != nil {
		t.Fatal(err)
	}
	if err := im.Flush(); err != nil {
		t.Fatal(err)
	}
	onDisk, _ := os.ReadFile(data)
	if !bytes.Equal(onDisk, want) {
		t.Fatal("after hydration the data file is not the backup plus the writes")
	}
	im.Close()
	// Every block is recorded: a reopened image fetches nothing.
	before := s.reads.Load()
	im2 := reopen(t, s, data, rec, time.Second)
	if !im2.Complete() {
		t.Fatal("the record does not mark every block")
	}
	if err := im2.Hydrate(ctx, 2); err != nil || s.reads.Load() != before {
		t.Fatalf("rehydrate: %v, %d fetches", err, s.reads.Load()-before)
	}
}

// Hydration stopped half-way resumes from the record: no block it marked
// is fetched again.
func TestHydrateResumesFromRecord(t *testing.T) {
	s := newFaultSource(t, 200<<14, 1<<14)
	s.readDelay = 20 * time.Millisecond
	im, data, rec := newWritable(t, s, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if err := im.Hydrate(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stopped hydration: %v", err)
	}
	im.Close()
	marks, err := loadRecord(rec, s)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range marks {
		if m {
			n++
		}
	}
	if n == 0 || n == len(marks) {
		t.Fatalf("%d of %d blocks recorded: want some", n, len(marks))
	}
	s.readDelay = 0
	im2 := reopen(t, s, data, rec, time.Second)
	if err := im2.Hydrate(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	for i, m := range marks {
		if m && s.readsOf(int64(i)) != 1 {
			t.Fatalf("recorded block %d fetched %d times", i, s.readsOf(int64(i)))
		}
	}
	onDisk, _ := os.ReadFile(data)
	if !bytes.Equal(onDisk, s.data) {
		t.Fatal("the resumed hydration's data file is not the backup")
	}
}

// An outage shorter than RetryFor makes a read of an unhydrated block
// wait, then return the backup's bytes; hydration waits it out too.
func TestWritableOutage(t *testing.T) {
	s := newFaultSource(t, 16<<14, 1<<14)
	im, data, _ := newWritable(t, s, 10*time.Second)
	s.down.Store(true)
	go func() { time.Sleep(1500 * time.Millisecond); s.down.Store(false) }()
	herr := make(chan error, 1)
	go func() { herr <- im.Hydrate(context.Background(), 2) }()
	buf := make([]byte, 5000)
	start := time.Now()
	if _, err := im.ReadAt(buf, 9<<14+3); err != nil || !bytes.Equal(buf, s.data[9<<14+3:9<<14+5003]) {
		t.Fatalf("read through the outage: %v", err)
	}
	if time.Since(start) < time.Second {
		t.Fatalf("the read returned in %v, during the outage", time.Since(start))
	}
	if err := <-herr; err != nil {
		t.Fatal(err)
	}
	onDisk, _ := os.ReadFile(data)
	if !bytes.Equal(onDisk, s.data) {
		t.Fatal("data file differs from the backup")
	}
}

// A record of another image is refused; a corrupt block fails hydration.
func TestWritableRecordMismatchAndCorrupt(t *testing.T) {
	s := newFaultSource(t, 8<<14, 1<<14)
	im, data, rec := newWritable(t, s, time.Second)
	s.corrupt.Store(true)
	if err := im.Hydrate(context.Background(), 1); !errors.Is(err, errCorrupt) {
		t.Fatalf("hydrate a corrupt backup: %v", err)
	}
	im.Close()
	if err := os.WriteFile(rec, []byte("CVHYDR02 not a record"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenWritable(s, data, rec, Options{}); !errors.Is(err, ErrRecord) {
		t.Fatalf("open with a foreign record: %v, want ErrRecord", err)
	}
}

// A reader waiting on a block that hydration is fetching when hydration
// is stopped fetches the block itself: it gets the backup's bytes, not
// the hydration's cancellation.
func TestHydrateStoppedUnderAReader(t *testing.T) {
	s := newFaultSource(t, 4<<14, 1<<14)
	s.readDelay = 400 * time.Millisecond
	im, _, _ := newWritable(t, s, 5*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	herr := make(chan error, 1)
	go func() { herr <- im.Hydrate(ctx, 1) }()
	time.Sleep(100 * time.Millisecond) // hydration leads block 0
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	buf := make([]byte, 1000)
	if _, err := im.ReadAt(buf, 10); err != nil || !bytes.Equal(buf, s.data[10:1010]) {
		t.Fatalf("read under a stopped hydration: %v", err)
	}
	if err := <-herr; !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped hydration: %v", err)
	}
	if s.readsOf(0) != 2 {
		t.Fatalf("block 0 fetched %d times, want 2 (the stopped hydration's, the reader's)", s.readsOf(0))
	}
}
