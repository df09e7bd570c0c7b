package lazy

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"syscall"
	"testing"
	"time"
)

// A failed fdatasync may have dropped the written pages (Linux marks them
// clean and reports the error once): no later Flush may write a record
// marking blocks written before it, even when its own fdatasync succeeds.
func TestFlushAfterFailedSyncMarksNothing(t *testing.T) {
	s := newFaultSource(t, 4<<14, 1<<14)
	im, _, rec := newWritable(t, s, time.Second)
	if err := im.Flush(); err != nil { // a record marking nothing
		t.Fatal(err)
	}
	if _, err := im.WriteAt(bytes.Repeat([]byte{7}, 1<<14), 1<<14); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fdatasync = syscall.Fdatasync })
	fdatasync = func(int) error { return syscall.EIO }
	if err := im.Flush(); err == nil {
		t.Fatal("Flush with a failing fdatasync: no error")
	}
	fdatasync = syscall.Fdatasync
	if err := im.Flush(); err == nil {
		t.Error("Flush after a failed fdatasync: no error, the lost write's loss hidden")
	}
	im.Close()
	have, err := loadRecord(rec, s)
	if err != nil {
		t.Fatal(err)
	}
	if have[1] {
		t.Fatal("the record marks a block whose writeback failed")
	}
}

// A write whose end overflows int64 is ErrBeyondEnd, not a panic.
func TestWriteAtOffsetOverflow(t *testing.T) {
	s := newFaultSource(t, 4<<14, 1<<14)
	im, _, _ := newWritable(t, s, time.Second)
	if _, err := im.WriteAt(make([]byte, 16), math.MaxInt64-8); !errors.Is(err, ErrBeyondEnd) {
		t.Fatalf("write at MaxInt64-8: %v, want ErrBeyondEnd", err)
	}
}

// A record whose bits were flipped (a bad sector, a stray write) is
// refused: it would mark an unhydrated block, read as the sparse file's
// zeros.
func TestWritableRecordBitFlip(t *testing.T) {
	s := newFaultSource(t, 4<<14, 1<<14)
	im, data, rec := newWritable(t, s, time.Second)
	if _, err := im.ReadAt(make([]byte, 10), 0); err != nil {
		t.Fatal(err)
	}
	if err := im.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	raw[recordHeader] |= 1 << 2 // block 2, never fetched
	if err := os.WriteFile(rec, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	im2, err := OpenWritable(s, data, rec, Options{})
	if err == nil {
		buf := make([]byte, 10)
		_, rerr := im2.ReadAt(buf, 2<<14)
		im2.Close()
		t.Fatalf("a flipped record accepted; block 2 reads %x (%v), the backup %x", buf, rerr, s.data[2<<14:2<<14+10])
	}
	if !errors.Is(err, ErrRecord) {
		t.Fatalf("open with a flipped record: %v, want ErrRecord", err)
	}
}

// A hydration stopped by its deadline is stopped as by a cancel: the
// reader waiting on its fetch fetches the block itself.
func TestHydrateDeadlineUnderAReader(t *testing.T) {
	s := newFaultSource(t, 4<<14, 1<<14)
	s.readDelay = 400 * time.Millisecond
	im, _, _ := newWritable(t, s, 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	herr := make(chan error, 1)
	go func() { herr <- im.Hydrate(ctx, 1) }()
	time.Sleep(100 * time.Millisecond) // hydration leads block 0
	buf := make([]byte, 1000)
	if _, err := im.ReadAt(buf, 10); err != nil || !bytes.Equal(buf, s.data[10:1010]) {
		t.Fatalf("read under a hydration past its deadline: %v", err)
	}
	if err := <-herr; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hydration past its deadline: %v", err)
	}
}

// A record of an image of another size (same block count and block size:
// its last block shorter) is refused.
func TestWritableRecordOtherSize(t *testing.T) {
	s := newFaultSource(t, 4<<14, 1<<14)
	im, _, rec := newWritable(t, s, time.Second)
	if _, err := im.ReadAt(make([]byte, 10), 3<<14); err != nil {
		t.Fatal(err)
	}
	if err := im.Close(); err != nil {
		t.Fatal(err)
	}
	other := newFaultSource(t, 4<<14-100, 1<<14)
	_, data, _ := newWritable(t, other, time.Second)
	if im2, err := OpenWritable(other, data, rec, Options{}); !errors.Is(err, ErrRecord) {
		if err == nil {
			im2.Close()
		}
		t.Fatalf("open with the record of a bigger image: %v, want ErrRecord", err)
	}
}

// hydratingInOutage returns a writable image of 2 blocks whose source is
// down, hydrating (1 worker) until the test ends.
func hydratingInOutage(t *testing.T, retryFor time.Duration) *Image {
	s := newFaultSource(t, 2<<14, 1<<14)
	s.down.Store(true)
	im, _, _ := newWritable(t, s, retryFor)
	ctx, cancel := context.WithCancel(context.Background())
	herr := make(chan error, 1)
	go func() { herr <- im.Hydrate(ctx, 1) }()
	t.Cleanup(func() { cancel(); <-herr })
	return im
}

// Hydration running out of retries in an outage is not a reader giving
// up: a reader arriving after it still waits RetryFor before its EIO (the
// failFast budget is for the kernel's re-issues of a failed read), since
// on a mounted volume an EIO read can cost the filesystem.
func TestHydrateOutageKeepsReadersWait(t *testing.T) {
	const retryFor = 4 * time.Second
	im := hydratingInOutage(t, retryFor)
	time.Sleep(retryFor + 500*time.Millisecond) // hydration gave up block 0 once
	start := time.Now()
	_, err := im.ReadAt(make([]byte, 10), 0)
	if waited := time.Since(start); err == nil || waited < retryFor-time.Second {
		t.Fatalf("read in an outage after hydration gave up: %v after %s, want an error after about %s", err, waited.Round(time.Millisecond), retryFor)
	}
}

// An unaligned write across three blocks fetches the two it covers in
// part and not the one it covers whole; a whole write of the short last
// block fetches nothing; a write across a block whose fetch fails
// permanently writes and marks the blocks before it, leaves that one
// unmarked, and reports how much it wrote.
func TestWritableWriteSpansBlocks(t *testing.T) {
	const bs = 1 << 14
	s := newFaultSource(t, 6*bs-100, bs)
	im, data, _ := newWritable(t, s, time.Second)
	span := bytes.Repeat([]byte{9}, 2*bs)
	if _, err := im.WriteAt(span, bs/2); err != nil { // half of 0, all of 1, half of 2
		t.Fatal(err)
	}
	last := bytes.Repeat([]byte{5}, bs-100)
	if _, err := im.WriteAt(last, 5*bs); err != nil {
		t.Fatal(err)
	}
	if s.readsOf(0) != 1 || s.readsOf(1) != 0 || s.readsOf(2) != 1 || s.readsOf(5) != 0 {
		t.Fatalf("fetches of blocks 0, 1, 2, 5: %d %d %d %d, want 1 0 1 0", s.readsOf(0), s.readsOf(1), s.readsOf(2), s.readsOf(5))
	}
	if _, err := im.ReadAt(make([]byte, 1), 3*bs); err != nil { // block 3 marked
		t.Fatal(err)
	}
	s.corrupt.Store(true)
	n, err := im.WriteAt(span[:bs], 4*bs-10) // 10 bytes of block 3, then part of block 4
	if !errors.Is(err, errCorrupt) || n != 10 {
		t.Fatalf("write over a corrupt block: %d bytes, %v; want 10 and the corrupt block's error", n, err)
	}
	if im.have[4] {
		t.Fatal("the block whose fetch failed is marked")
	}
	s.corrupt.Store(false)
	want := bytes.Clone(s.data)
	copy(want[bs/2:], span)
	copy(want[5*bs:], last)
	copy(want[4*bs-10:], span[:10])
	onDisk, _ := os.ReadFile(data)
	got := make([]byte, len(want))
	if _, err := im.ReadAt(got, 0); err != nil || !bytes.Equal(got, want) || !bytes.Equal(onDisk[:3*bs], want[:3*bs]) {
		t.Fatalf("read back: %v", err)
	}
}

// A reader that waited on a hydration's fetch through an outage until the
// hydration ran out of retries fetches the block itself, but only for
// what is left of its own RetryFor: its wait stays about RetryFor (the
// hung-task and kubelet bounds of rule 3), not twice that.
func TestHydrateOutageBoundsReadersWait(t *testing.T) {
	const retryFor = 3 * time.Second
	im := hydratingInOutage(t, retryFor)
	time.Sleep(300 * time.Millisecond) // hydration leads block 0
	start := time.Now()
	_, err := im.ReadAt(make([]byte, 10), 0)
	if waited := time.Since(start); err == nil || waited > retryFor+time.Second {
		t.Fatalf("read in an outage joining hydration's fetch: %v after %s, want an error after about %s", err, waited.Round(time.Millisecond), retryFor)
	}
}
