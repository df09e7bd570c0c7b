package lazy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/chainvol/chainvol/internal/directio"
	"github.com/chainvol/chainvol/internal/durable"
)

// ErrReadOnly is a write or flush of an image made by New (a browse):
// only OpenWritable's images take writes.
var ErrReadOnly = errors.New("lazy image: read-only")

// ErrBeyondEnd is a write past the image's end: its size is the backup's,
// fixed (an instant volume is not expanded while it hydrates).
var ErrBeyondEnd = errors.New("lazy image: write beyond the end of the image")

// fdatasync is syscall.Fdatasync; tests replace it to inject a failed
// writeback (a fault injector only).
var fdatasync = syscall.Fdatasync

// writable is the state of an image made by OpenWritable.
type writable struct {
	record   string     // the hydration record's path
	flushMu  sync.Mutex // one flush at a time
	recorded int64      // marks in the record last written (-1: none written by this process)
	live     *liveMarks // every mark, before it counts (live.go)
	// syncErr is the first failed fdatasync, for good: Linux reports a
	// failed writeback once and marks the pages clean, so a later
	// fdatasync succeeding says nothing of the writes before it.
	syncErr error
}

// OpenWritable opens a writable lazy image of src whose cache is the
// volume data file dataPath (an instant restore's lvol): it must exist,
// at least src.SizeBytes long (an lvol larger than its backup: the bytes
// past the backup's end are neither served nor touched; the filesystem
// grows into them once the volume is staged on the lvol itself), and
// read zeros at the blocks the record does not
// mark (made sparse for the restore). recordPath is the hydration record
// (STATE/hydration/VOLUME.bits): the blocks it marks are in dataPath,
// hydrated or written, and are never fetched; a missing record marks
// none. Zero blocks of the manifest are marked at once (the data file's
// holes are their bytes). Reads fetch unmarked blocks into dataPath first
// (verified, once: rules 1 to 4 of the browse); WriteAt, Flush and
// Hydrate are the writable half. Errors: the files', a record that does
// not match src (ErrRecord).
func OpenWritable(src Source, dataPath, recordPath string, opts Options) (*Image, error) {
	opts = withDefaults(opts)
	f, err := os.OpenFile(dataPath, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("lazy image data file: %w", err)
	}
	if st, err := f.Stat(); err != nil || st.Size() < src.SizeBytes() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%s is %d bytes, smaller than the backup's %d", dataPath, st.Size(), src.SizeBytes())
		}
		return nil, fmt.Errorf("lazy image data file: %w", err)
	}
	have, err := loadRecord(recordPath, src)
	if err == nil {
		err = durable.MkdirAll(filepath.Dir(recordPath), 0o700)
	}
	if err == nil { // a killed Flush's temporary file
		err = durable.RemoveTemps(recordPath)
	}
	var live *liveMarks
	if err == nil {
		live, err = openLive(recordPath, src, have)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	im := &Image{src: src, opts: opts, cache: f, direct: directio.Open(f), have: have, inflight: map[int64]*fetch{},
		gaveUp: map[int64]time.Time{}, rw: &writable{record: recordPath, recorded: -1, live: live}}
	for i := range src.NumBlocks() {
		if src.IsZero(i) {
			im.have[i] = true
		} else {
			im.dataBlocks++
		}
		if im.have[i] {
			im.marked++
			im.markedBytes += src.BlockLen(i)
		}
	}
	return im, nil
}

// withDefaults fills the zero fields of opts.
func withDefaults(opts Options) Options {
	if opts.RetryFor <= 0 {
		opts.RetryFor = DefaultRetryFor
	}
	if opts.Permanent == nil {
		opts.Permanent = func(error) bool { return false }
	}
	return opts
}

// Hydrated returns the bytes marked so far (hydrated, written, or zero
// blocks of the manifest) and the image's size, both in bytes.
func (im *Image) Hydrated() (done, total int64) {
	im.mu.Lock()
	defer im.mu.Unlock()
	return im.markedBytes, im.src.SizeBytes()
}

// WriteAt is WriteAtContext without a context.
func (im *Image) WriteAt(p []byte, off int64) (int, error) {
	return im.WriteAtContext(context.Background(), p, off)
}

// WriteAtContext writes p at off into the data file. A write covering a
// whole unmarked block marks it (it is never fetched); a partial write of
// an unmarked block fetches the block first, under its single flight,
// writes it and then p over it, then marks it. The write is durable only
// after Flush. Errors: ErrReadOnly, ErrBeyondEnd, a fetch's (after
// RetryFor), the data file's.
func (im *Image) WriteAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if im.rw == nil {
		return 0, ErrReadOnly
	}
	if off < 0 || int64(len(p)) > im.src.SizeBytes()-off { // not off+len: it may overflow
		return 0, fmt.Errorf("%w: %d bytes at %d, size %d", ErrBeyondEnd, len(p), off, im.src.SizeBytes())
	}
	return im.eachBlock(off, off+int64(len(p)), func(i, pos, stop int64) error {
		return im.writeIn(ctx, i, p[pos-off:stop-off], pos)
	})
}

// writeIn writes part, which lies inside block i, at image offset pos.
func (im *Image) writeIn(ctx context.Context, i int64, part []byte, pos int64) error {
	whole := pos == i*im.src.BlockSize() && int64(len(part)) == im.src.BlockLen(i)
	until := time.Now().Add(im.opts.RetryFor)
	for {
		wrote := false
		err := im.underBlock(ctx, i, func() error {
			wrote = true
			if !whole {
				im.demand.Add(1)
				defer im.demand.Add(-1)
				// Fetched whatever the writer's interruption: its waiters want it.
				if err := im.fetchRetrying(context.WithoutCancel(ctx), i, until); err != nil {
					return err
				}
			}
			return im.writeData(part, pos)
		})
		switch {
		case wrote:
			return err
		case err == nil: // marked: by now only the application writes it
			return im.writeData(part, pos)
		case whole && ctx.Err() == nil:
			continue // a reader's fetch failed; a whole write needs no fetch
		default:
			return err
		}
	}
}

// writeData writes part at pos into the data file.
func (im *Image) writeData(part []byte, pos int64) error {
	if _, err := im.cache.WriteAt(part, pos); err != nil {
		return fmt.Errorf("%w: write %d bytes at %d: %w", errCache, len(part), pos, err)
	}
	return nil
}

// Flush makes every write and fetch that returned before it durable:
// fdatasync of the data file, then, if blocks were marked since, the
// hydration record (durable.WriteFile: temp, fsync, rename). The record
// is thus written only after an fdatasync that began after the last block
// it marks was written (the crash rule). A failed fdatasync fails this and
// every later Flush and the record is never written again: the kernel may
// have dropped the pages it could not write, and reports that only once.
// The FUSE file's fsync and flush call it. Errors: ErrReadOnly, the data
// file's (sticky), the record's.
func (im *Image) Flush() error {
	w := im.rw
	if w == nil {
		return ErrReadOnly
	}
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	if w.syncErr != nil {
		return w.syncErr
	}
	im.mu.Lock()
	marks, rec := im.marked, encodeRecord(im.have, im.src)
	im.mu.Unlock()
	if err := fdatasync(int(im.cache.Fd())); err != nil {
		w.live.forget() // the pages it marks may be gone: a takeover fetches them again
		w.syncErr = fmt.Errorf("%w: fdatasync (writes since the last good one may be lost): %w", errCache, err)
		return w.syncErr
	}
	if marks == w.recorded {
		return nil
	}
	if err := durable.WriteFile(w.record, rec, 0o600); err != nil {
		return fmt.Errorf("hydration record: %w", err)
	}
	w.recorded = marks
	return nil
}

// Complete reports whether every block is marked.
func (im *Image) Complete() bool {
	im.mu.Lock()
	defer im.mu.Unlock()
	return im.marked == int64(len(im.have))
}

// Writable reports whether the image takes writes (OpenWritable).
func (im *Image) Writable() bool { return im.rw != nil }
