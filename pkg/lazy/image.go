package lazy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chainvol/chainvol/internal/directio"
)

// Source is what a lazy image reads its blocks from; *s3chain.BlockReader
// is one. ReadBlock must return only verified bytes (BlockLen(i) of them)
// or an error; a zero block (IsZero) is never read.
type Source interface {
	SizeBytes() int64
	BlockSize() int64
	NumBlocks() int64
	BlockLen(i int64) int64
	IsZero(i int64) bool
	ReadBlock(ctx context.Context, i int64, objBuf, buf []byte) ([]byte, int64, error)
}

// DefaultRetryFor is how long a read keeps retrying a block the target
// fails to serve: below the kernel's hung-task warning (120 s,
// kernel.hung_task_timeout_secs) that a filesystem's reader blocked on the
// loop device would trigger, and below the kubelet's 2-minute default
// runtime request timeout. Past it the read fails with EIO, never zeros.
const DefaultRetryFor = 90 * time.Second

// Options configure an Image.
type Options struct {
	// CacheDir holds the cache file of fetched blocks (a sparse file of
	// SizeBytes, unlinked at once so that nothing outlives the process);
	// default os.TempDir().
	CacheDir string
	// RetryFor bounds in time the retries of one block fetch that fails
	// with anything but Permanent (default DefaultRetryFor). A block of
	// the wrong length and a failed write of the cache file (its
	// directory full) are never retried.
	RetryFor time.Duration
	// Permanent reports an error no retry can fix (a block whose object
	// does not match its digest): the read fails at once. Default: only
	// context errors.
	Permanent func(error) bool
	// OnFetch, if set, is called after every block fetch with its latency
	// and error (nil on success): the on-demand fetch histogram's hook.
	OnFetch func(block int64, d time.Duration, err error)
}

// Stats are an Image's counters.
type Stats struct {
	// Blocks is the image's block count; DataBlocks those that are not
	// all zeros (the only ones a read may fetch).
	Blocks, DataBlocks int64
	// FetchedBlocks were fetched and verified; FetchedBytes is their
	// object bytes (compressed, as stored), FetchedDataBytes their bytes.
	FetchedBlocks, FetchedBytes, FetchedDataBytes int64
	// Retries counts failed fetches that were tried again; Failures the
	// reads of blocks that ended in an error.
	Retries, Failures int64
}

// Image is a backup image served lazily: ReadAt fetches the blocks it
// touches that are not cached yet (once, however many readers want them)
// and reads the rest from the cache file. It is safe for concurrent use.
type Image struct {
	src   Source
	opts  Options
	cache *os.File
	// direct is the cache opened with O_DIRECT for fetched blocks (a
	// writable image's data file; nil: buffered, as a browse's cache),
	// bufs the fetches' reused memory (bufs.go).
	direct *os.File
	bufs   fetchBufs

	mu          sync.Mutex
	have        []bool              // block i is in the cache file, verified
	inflight    map[int64]*fetch    // blocks being fetched
	gaveUp      map[int64]time.Time // when a block's fetch last ran out of retries
	marked      int64               // blocks marked in have
	markedBytes int64               // their bytes
	warmed      map[int64]bool      // blocks of the cache file asked into the page cache (warm)

	// demand counts the reads and partial writes waiting for an unmarked
	// block or for the disk (readCache): hydration narrows while there are
	// (priority.go).
	demand priority

	fetched, fetchedBytes, fetchedData, retries, failures atomic.Int64
	dataBlocks                                            int64

	// rw is set by OpenWritable: the cache is a volume's data file, a
	// zero block is read from it (the application may have written it),
	// and flushes write the hydration record.
	rw *writable
}

// fetch is one block fetch that readers of the same block wait for.
type fetch struct {
	done chan struct{}
	err  error
	// wanted is set by a reader that waits for a hydration's fetch: the
	// block is then written through the page cache (writeFetched).
	wanted atomic.Bool
}

// New returns a lazy image of src with an empty cache. Errors: the cache
// file cannot be made.
func New(src Source, opts Options) (*Image, error) {
	opts = withDefaults(opts)
	f, err := os.CreateTemp(opts.CacheDir, "chainvol-lazy-*.cache")
	if err != nil {
		return nil, fmt.Errorf("lazy image cache: %w", err)
	}
	_ = os.Remove(f.Name()) // the open file is the cache; nothing to clean up after a crash
	if err := f.Truncate(src.SizeBytes()); err != nil {
		f.Close()
		return nil, fmt.Errorf("lazy image cache: %w", err)
	}
	im := &Image{src: src, opts: opts, cache: f, have: make([]bool, src.NumBlocks()), inflight: map[int64]*fetch{}, gaveUp: map[int64]time.Time{}}
	for i := range src.NumBlocks() {
		if !src.IsZero(i) {
			im.dataBlocks++
		}
	}
	return im, nil
}

// SizeBytes is the image's size in bytes.
func (im *Image) SizeBytes() int64 { return im.src.SizeBytes() }

// Stats returns the counters so far.
func (im *Image) Stats() Stats {
	return Stats{Blocks: im.src.NumBlocks(), DataBlocks: im.dataBlocks, FetchedBlocks: im.fetched.Load(),
		FetchedBytes: im.fetchedBytes.Load(), FetchedDataBytes: im.fetchedData.Load(),
		Retries: im.retries.Load(), Failures: im.failures.Load()}
}

// Close releases the cache file (its blocks are gone with it); a
// writable image's is flushed first (Flush). Errors: the flush's.
func (im *Image) Close() error {
	var err error
	if im.rw != nil {
		err = im.Flush()
	}
	if im.direct != nil {
		err = errors.Join(err, im.direct.Close())
	}
	if im.rw != nil {
		err = errors.Join(err, im.rw.live.close())
	}
	return errors.Join(err, im.cache.Close())
}

// ReadAt is ReadAtContext without a context.
func (im *Image) ReadAt(p []byte, off int64) (int, error) {
	return im.ReadAtContext(context.Background(), p, off)
}

// ReadAtContext reads len(p) bytes at off (io.ReaderAt's contract: fewer
// only at the end, with io.EOF), fetching the blocks it touches that are
// not cached. A block that cannot be fetched and verified fails the read
// (the bytes before it are returned with the error): p never receives
// bytes other than the backup's. Errors: the block's fetch error (after
// retries for RetryFor), ctx's, the cache file's.
func (im *Image) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	size := im.src.SizeBytes()
	if off < 0 {
		return 0, fmt.Errorf("lazy image: negative offset %d", off)
	}
	if off >= size {
		return 0, io.EOF
	}
	end := min(off+int64(len(p)), size)
	n, err := im.eachBlock(off, end, func(i, pos, stop int64) error {
		return im.readIn(ctx, i, p[pos-off:stop-off], pos)
	})
	if err == nil && end < off+int64(len(p)) {
		err = io.EOF
	}
	return n, err
}

// eachBlock calls fn for each block i that [off, end) touches, in order,
// with the part [pos, stop) of the range inside it, and returns the bytes
// of the parts done before fn's first error, and that error.
func (im *Image) eachBlock(off, end int64, fn func(i, pos, stop int64) error) (int, error) {
	bs := im.src.BlockSize()
	for pos := off; pos < end; {
		i := pos / bs
		stop := min(end, i*bs+im.src.BlockLen(i))
		if err := fn(i, pos, stop); err != nil {
			return int(pos - off), err
		}
		pos = stop
	}
	return int(end - off), nil
}

// readIn fills part, which lies inside block i, from image offset pos.
func (im *Image) readIn(ctx context.Context, i int64, part []byte, pos int64) error {
	if im.src.IsZero(i) && im.rw == nil {
		clear(part)
		return nil
	}
	if err := im.ensure(ctx, i); err != nil {
		return err
	}
	return im.readCache(i, part, pos)
}

// ensure returns once block i is in the cache, fetching it or waiting for
// the reader already fetching it.
func (im *Image) ensure(ctx context.Context, i int64) error {
	if im.isMarked(i) {
		return nil
	}
	im.demand.Add(1)
	defer im.demand.Add(-1)
	im.want(i)
	until := time.Now().Add(im.opts.RetryFor)
	return im.underBlock(ctx, i, func() error {
		// The leader's fetch is not bound to its own reader's context: the
		// readers waiting for the block still want it when that reader
		// gives up.
		return im.fetchRetrying(context.WithoutCancel(ctx), i, until)
	})
}

// want marks the fetch of block i in flight, if any, as wanted by a
// reader.
func (im *Image) want(i int64) {
	im.mu.Lock()
	defer im.mu.Unlock()
	if f := im.inflight[i]; f != nil {
		f.wanted.Store(true)
	}
}

// wanted reports whether a reader waits for the fetch of block i in
// flight.
func (im *Image) wanted(i int64) bool {
	im.mu.Lock()
	defer im.mu.Unlock()
	f := im.inflight[i]
	return f != nil && f.wanted.Load()
}

// isMarked reports whether block i is in the cache.
func (im *Image) isMarked(i int64) bool {
	im.mu.Lock()
	defer im.mu.Unlock()
	return im.have[i]
}

// underBlock returns once block i is marked in the cache: at once if it
// is; else, as the block's single flight leader, it runs fill (which must
// leave the block's bytes in the cache file) and marks the block when fill
// succeeds; else it waits for the leader. Nothing else writes an unmarked
// block's bytes, and nothing writes a marked block but the application:
// so a fetch never overwrites a write. Errors: fill's, the leader's
// (a waiter's), ctx's.
func (im *Image) underBlock(ctx context.Context, i int64, fill func() error) error {
	var f *fetch
	for f == nil {
		im.mu.Lock()
		if im.have[i] {
			im.mu.Unlock()
			return nil
		}
		lead, busy := im.inflight[i]
		if !busy {
			f = &fetch{done: make(chan struct{})}
			im.inflight[i] = f
		}
		im.mu.Unlock()
		if busy {
			select {
			case <-lead.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			// A leader stopped by its own context (hydration cancelled or
			// past its deadline) says nothing of the block: try again,
			// leading if need be.
			if !errors.Is(lead.err, errStopped) {
				return lead.err
			}
		}
	}
	f.err = fill()
	if f.err == nil && im.rw != nil {
		f.err = im.rw.live.mark(i) // before the block counts as marked
	}
	im.mu.Lock()
	if f.err == nil {
		im.have[i] = true
		im.marked++
		im.markedBytes += im.src.BlockLen(i)
	} else {
		im.failures.Add(1)
	}
	delete(im.inflight, i)
	im.mu.Unlock()
	close(f.done)
	return f.err
}

// failFast is the budget of a fetch of a block that gave up less than
// RetryFor ago: the kernel re-issues a failed read page by page (and the
// loop device splits it), and each of those must not wait RetryFor again.
const failFast = 2 * time.Second

// fetchRetrying fetches block i into the cache file, retrying failures
// that are not Permanent with a backoff (100 ms doubling to 5 s), all
// within RetryFor from the first try (failFast for a block that gave up
// less than RetryFor ago) and, for a reader or writer, before until (its
// RetryFor from when it first wanted the block, however long it waited on
// another's fetch). A zero until is hydration's fetch: its running out of
// retries is not a reader giving up, so it records no give-up (a reader
// coming later still waits RetryFor) and is errStopped to its waiters
// (they fetch for what is left of their own RetryFor).
func (im *Image) fetchRetrying(ctx context.Context, i int64, until time.Time) error {
	background := until.IsZero()
	budget := im.opts.RetryFor
	im.mu.Lock()
	if t, ok := im.gaveUp[i]; ok && time.Since(t) < im.opts.RetryFor {
		budget = min(budget, failFast)
	}
	im.mu.Unlock()
	if !background {
		budget = min(budget, time.Until(until))
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	wait := 100 * time.Millisecond
	for {
		err := im.fetchOne(ctx, i, background)
		if err == nil {
			return nil
		}
		if parent.Err() != nil { // stopped (hydration cancelled): says nothing of the block
			return fmt.Errorf("%w: %w", errStopped, parent.Err())
		}
		if im.opts.Permanent(err) || errors.Is(err, errWrongLength) || errors.Is(err, errCache) {
			return err
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("block %d still failing after %s of retries: %w", i, budget, err)
			if background {
				return fmt.Errorf("%w: %w", errStopped, err)
			}
			im.mu.Lock()
			im.gaveUp[i] = time.Now()
			im.mu.Unlock()
			return err
		}
		im.retries.Add(1)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// errStopped is a fetch ended by its caller's context (a hydration
// cancelled or past its deadline) or a hydration's fetch out of retries:
// it says nothing a waiting reader must take as its answer, and a waiter
// fetches the block itself.
var errStopped = errors.New("lazy image: fetch stopped")

// errWrongLength is a block whose source returned other than BlockLen
// bytes: a broken Source, which no retry mends.
var errWrongLength = errors.New("lazy image: the source returned a block of the wrong length")

// errCache is a failed write of the cache file (its directory full, most
// often): a local fault, which retrying the target does not mend.
var errCache = errors.New("lazy image cache")

// cacheDir is the cache file's directory, for errors.
func (im *Image) cacheDir() string {
	if im.opts.CacheDir == "" {
		return os.TempDir()
	}
	return im.opts.CacheDir
}

// writeFetched writes a fetched block's data at off of the cache: with
// O_DIRECT when the cache has a direct descriptor (directio.WriteAt) and
// no reader waits for the block (background), which a hydration writing
// every block of a large volume once needs (its buffered writes were most
// of its CPU: docs/BENCHMARKS.md "Instant restore"). A block a reader
// waits for goes through the page cache: the write returns without
// waiting for the disk, which hydration's direct writes keep busy, and
// the reader's read of it, and the filesystem's next reads of the same
// block, are served from memory (they took 20-60 ms each behind
// hydration's writes). The page cache stays coherent: the kernel writes
// back and drops the range's cached pages around a direct write, and no
// write of the application is pending on an unmarked block (rule 8).
// spare is an aligned buffer of a block that unaligned data is copied
// into for a direct write (its fetchBuf's dec: data that is not aligned
// never lies in it).
func (im *Image) writeFetched(data []byte, off int64, background bool, spare []byte) error {
	if im.direct == nil || !background {
		_, err := im.cache.WriteAt(data, off)
		return err
	}
	return directio.WriteAt(im.direct, im.cache, data, off, spare)
}

// fetchOne fetches, verifies (Source.ReadBlock) and caches block i once;
// background is a hydration's fetch (writeFetched).
func (im *Image) fetchOne(ctx context.Context, i int64, background bool) error {
	start := time.Now()
	fb := im.bufs.get(im.src)
	defer im.bufs.put(fb) // data is in fb (or the source's memory): unused once written
	data, n, err := im.src.ReadBlock(ctx, i, fb.obj, fb.dec)
	if want := im.src.BlockLen(i); err == nil && int64(len(data)) != want {
		// The cache file's zeros must never stand in for missing bytes.
		err = fmt.Errorf("%w: block %d: %d bytes, want %d", errWrongLength, i, len(data), want)
	}
	if err == nil {
		err = im.writeFetched(data, i*im.src.BlockSize(), background && !im.wanted(i), fb.dec)
		if err != nil {
			err = fmt.Errorf("%w (--cache-dir %s): write block %d: %w", errCache, im.cacheDir(), i, err)
		}
	}
	if im.opts.OnFetch != nil {
		im.opts.OnFetch(i, time.Since(start), err)
	}
	if err != nil {
		return err
	}
	im.fetched.Add(1)
	im.fetchedBytes.Add(n)
	im.fetchedData.Add(int64(len(data)))
	return nil
}
