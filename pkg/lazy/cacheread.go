package lazy

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// readCache reads part, which lies inside block i (marked), at image
// offset pos of the cache file. What the page cache holds returns at once
// (preadv2 RWF_NOWAIT, Linux ≥ 4.14). A read that has to go to the disk
// (a block hydration wrote with O_DIRECT leaves nothing in the page
// cache) counts as demand while it waits, so hydration narrows (priority:
// its direct writes are what the disk is busy with), and first asks the
// kernel to read the whole block in (warm): a filesystem reads an inode
// table block, a directory or a file in several requests, and each of
// them went to the disk behind hydration's writes (20-400 ms each in the
// bench, docs/BENCHMARKS.md "Instant restore (issue 27)"). A kernel
// without RWF_NOWAIT gets a plain read. Errors: the cache file's.
func (im *Image) readCache(i int64, part []byte, pos int64) error {
	if im.src.IsZero(i) { // a hole of the data file, or the application's write of it: nothing to warm
		_, err := im.cache.ReadAt(part, pos)
		return cacheErr(i, err)
	}
	n, err := unix.Preadv2(int(im.cache.Fd()), [][]byte{part}, pos, unix.RWF_NOWAIT)
	if err != nil {
		n = 0 // -1
	}
	switch {
	case err == nil && n == len(part):
		return nil
	case err == nil && n > 0, errors.Is(err, unix.EAGAIN):
		im.demand.Add(1)
		defer im.demand.Add(-1)
		im.warm(i)
	default: // RWF_NOWAIT refused (or a fault the plain read reports)
		n = 0
	}
	_, err = im.cache.ReadAt(part[n:], pos+int64(n))
	return cacheErr(i, err)
}

// cacheErr is a failed read of block i of the cache file, or nil.
func cacheErr(i int64, err error) error {
	if err != nil {
		return fmt.Errorf("lazy image cache: read block %d: %w", i, err)
	}
	return nil
}

// warm asks the kernel, once per block, to read block i of the cache file
// into the page cache (POSIX_FADV_WILLNEED: the read is started, not
// waited for). Best effort: a refusal only leaves the pages to be read
// when asked for.
func (im *Image) warm(i int64) {
	im.mu.Lock()
	if im.warmed == nil {
		im.warmed = map[int64]bool{}
	}
	done := im.warmed[i]
	im.warmed[i] = true
	im.mu.Unlock()
	if !done {
		_ = unix.Fadvise(int(im.cache.Fd()), i*im.src.BlockSize(), im.src.BlockLen(i), unix.FADV_WILLNEED)
	}
}
