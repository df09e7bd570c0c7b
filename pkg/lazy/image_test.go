package lazy

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var errCorrupt = errors.New("corrupt block")

// faultSource is an in-memory Source whose faults the test switches: a
// fault injector only (the real source is s3chain.BlockReader, used by
// browse_test.go).
type faultSource struct {
	data      []byte
	bs        int64
	zero      map[int64]bool
	down      atomic.Bool // every read fails (transiently)
	corrupt   atomic.Bool // every read fails permanently
	short     atomic.Bool // every read returns its block less its last byte, without error
	reads     atomic.Int64
	perBlock  sync.Map // block -> *atomic.Int64 reads
	readDelay time.Duration
}

func newFaultSource(t *testing.T, size, bs int64, zero ...int64) *faultSource {
	s := &faultSource{data: make([]byte, size), bs: bs, zero: map[int64]bool{}}
	if _, err := rand.Read(s.data); err != nil {
		t.Fatal(err)
	}
	for _, i := range zero {
		s.zero[i] = true
		clear(s.data[i*bs : min(size, (i+1)*bs)])
	}
	return s
}

func (s *faultSource) SizeBytes() int64       { return int64(len(s.data)) }
func (s *faultSource) BlockSize() int64       { return s.bs }
func (s *faultSource) NumBlocks() int64       { return (s.SizeBytes() + s.bs - 1) / s.bs }
func (s *faultSource) BlockLen(i int64) int64 { return min(s.bs, s.SizeBytes()-i*s.bs) }
func (s *faultSource) IsZero(i int64) bool    { return s.zero[i] }
func (s *faultSource) ReadBlock(ctx context.Context, i int64, _, _ []byte) ([]byte, int64, error) {
	s.reads.Add(1)
	c, _ := s.perBlock.LoadOrStore(i, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
	select { // as the real source, a cancelled fetch ends at once
	case <-time.After(s.readDelay):
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	if s.zero[i] {
		panic("a zero block was fetched")
	}
	if s.corrupt.Load() {
		return nil, 0, errCorrupt
	}
	if s.down.Load() {
		return nil, 0, errors.New("target unreachable")
	}
	n := s.BlockLen(i)
	if s.short.Load() {
		n--
	}
	return bytes.Clone(s.data[i*s.bs : i*s.bs+n]), n, nil
}

func newTestImage(t *testing.T, s *faultSource, retryFor time.Duration) *Image {
	im, err := New(s, Options{CacheDir: t.TempDir(), RetryFor: retryFor, Permanent: func(err error) bool { return errors.Is(err, errCorrupt) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { im.Close() })
	return im
}

// TestReadAtFetchesOnce: concurrent unaligned readers of the whole image
// get its bytes; each data block is fetched once, zero blocks never.
func TestReadAtFetchesOnce(t *testing.T) {
	s := newFaultSource(t, 10*4096+123, 4096, 2, 7)
	s.readDelay = 5 * time.Millisecond
	im := newTestImage(t, s, time.Second)
	var wg sync.WaitGroup
	for r := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := make([]byte, len(s.data))
			for off, step := 0, 1000+r*777; off < len(got); off += step {
				n, err := im.ReadAt(got[off:min(off+step, len(got))], int64(off))
				if err != nil && !errors.Is(err, io.EOF) || n != min(step, len(got)-off) {
					t.Errorf("reader %d: ReadAt at %d: %d, %v", r, off, n, err)
					return
				}
			}
			if !bytes.Equal(got, s.data) {
				t.Errorf("reader %d: wrong bytes", r)
			}
		}()
	}
	wg.Wait()
	s.perBlock.Range(func(k, v any) bool {
		if n := v.(*atomic.Int64).Load(); n != 1 {
			t.Errorf("block %v fetched %d times", k, n)
		}
		return true
	})
	if st := im.Stats(); st.FetchedBlocks != 9 || st.DataBlocks != 9 || st.Blocks != 11 {
		t.Errorf("stats %+v, want 9 of 9 data blocks of 11 fetched", st)
	}
	if n, err := im.ReadAt(make([]byte, 10), im.SizeBytes()-4); n != 4 || !errors.Is(err, io.EOF) {
		t.Errorf("read across the end: %d, %v", n, err)
	}
}

// TestReadAtCorrupt: a block that fails verification fails the read at
// once (no retry) with none of its bytes, and is fetched again next time.
func TestReadAtCorrupt(t *testing.T) {
	s := newFaultSource(t, 4*4096, 4096)
	im := newTestImage(t, s, time.Minute)
	s.corrupt.Store(true)
	p := make([]byte, 8192)
	start := time.Now()
	n, err := im.ReadAt(p, 4096)
	if !errors.Is(err, errCorrupt) || n != 0 || time.Since(start) > 5*time.Second {
		t.Fatalf("read of a corrupt block: %d, %v after %v", n, err, time.Since(start))
	}
	if !bytes.Equal(p, make([]byte, len(p))) {
		t.Fatal("the failed read wrote bytes into the buffer")
	}
	s.corrupt.Store(false)
	if _, err := im.ReadAt(p, 4096); err != nil || !bytes.Equal(p, s.data[4096:3*4096]) {
		t.Fatalf("read after repair: %v", err)
	}
	if st := im.Stats(); st.Failures != 1 || st.Retries != 0 {
		t.Errorf("stats %+v, want 1 failure, 0 retries", st)
	}
}

// TestReadAtOutage: during an outage a read waits and retries, and
// returns the right bytes once the target is back; an outage longer than
// RetryFor fails the read (never zeros) after about RetryFor.
func TestReadAtOutage(t *testing.T) {
	s := newFaultSource(t, 4*4096, 4096)
	im := newTestImage(t, s, 2*time.Second)
	s.down.Store(true)
	done := make(chan error, 1)
	p := make([]byte, 4096)
	go func() { _, err := im.ReadAt(p, 0); done <- err }()
	time.Sleep(700 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("read returned during the outage: %v", err)
	default:
	}
	s.down.Store(false)
	if err := <-done; err != nil || !bytes.Equal(p, s.data[:4096]) {
		t.Fatalf("read after the outage: %v", err)
	}

	s.down.Store(true)
	start := time.Now()
	n, err := im.ReadAt(p, 4096)
	el := time.Since(start)
	if err == nil || n != 0 || el < 1500*time.Millisecond || el > 4*time.Second {
		t.Fatalf("read in a long outage: %d, %v after %v, want an error after about 2 s", n, err, el)
	}
	if st := im.Stats(); st.Retries == 0 || st.Failures != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestReadAtShortBlock: a source that breaks its contract with a block of
// the wrong length (a decoder bug) fails the read at once; the missing
// bytes are never served as the cache file's zeros.
func TestReadAtShortBlock(t *testing.T) {
	s := newFaultSource(t, 3*4096+100, 4096)
	im := newTestImage(t, s, time.Minute)
	s.short.Store(true)
	for _, off := range []int64{0, 3 * 4096} {
		p := make([]byte, 4096)
		start := time.Now()
		n, err := im.ReadAt(p, off)
		if err == nil || errors.Is(err, io.EOF) || n != 0 || time.Since(start) > 5*time.Second {
			t.Fatalf("read at %d of a short block: %d bytes, %v after %v", off, n, err, time.Since(start))
		}
	}
	s.short.Store(false)
	p := make([]byte, 4096)
	if _, err := im.ReadAt(p, 0); err != nil || !bytes.Equal(p, s.data[:4096]) {
		t.Fatalf("read after repair: %v", err)
	}
}

// TestReadAtCacheFull: a cache directory without room fails the read at
// once (a local fault no retry of the target mends), saying so, rather
// than after RetryFor.
func TestReadAtCacheFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	s := newFaultSource(t, 4<<20, 1<<20)
	im, err := New(s, Options{CacheDir: dir, RetryFor: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	start := time.Now()
	_, err = im.ReadAt(make([]byte, 4096), 0)
	if err == nil || !strings.Contains(err.Error(), "no space left") || time.Since(start) > 5*time.Second {
		t.Fatalf("read with a full cache: %v after %v", err, time.Since(start))
	}
}
