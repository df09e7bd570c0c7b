package lazy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/chainvol/chainvol/internal/durable"
)

// A block marked in memory but not yet in the hydration record (it is
// written at Flush) would be fetched again by the next server of the
// image, over whatever the application wrote to it since. After a crash
// of the machine that is the crash rule at work: only what was flushed
// counts, for the application as for the filesystem. But a server that
// takes a kept FUSE connection over (TakeOver) serves the same
// application, whose writes it answered and whose page cache holds them:
// it must not lose one. So every mark is also written, before the block
// counts as marked, to the live marks file beside the record (RECORD.live:
// a byte per block, no fsync). A process's death does not lose what it
// wrote to a file; a machine's crash may, and may keep a mark without its
// block, so the live marks count only within the boot that wrote them
// (the kernel's boot_id heads the file). The data they mark was written
// in that boot too, and is in the data file for every later reader.

const liveMagic = "CVHYLIV1"

// liveHeader is the magic, the boot_id (36 bytes) and the backup's size,
// block count and block size (little-endian uint64s), padded.
const liveHeader = 128

// liveMarks is an open live marks file.
type liveMarks struct {
	f *os.File
}

// livePath is the live marks file of the record at recordPath.
func livePath(recordPath string) string { return recordPath + ".live" }

// openLive merges into have the live marks of recordPath written in this
// boot for src, then starts the file again from have (durable.WriteFile:
// a kill leaves the old one or the new).
// Errors: the file's; a file of another boot or backup is not an error.
func openLive(recordPath string, src Source, have []bool) (*liveMarks, error) {
	head, err := liveHead(src)
	if err != nil {
		return nil, err
	}
	path := livePath(recordPath)
	raw, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("live marks: %w", err)
	}
	if len(raw) == liveHeader+len(have) && bytes.Equal(raw[:liveHeader], head) {
		for i := range have {
			have[i] = have[i] || raw[liveHeader+i] == 1
		}
	}
	out := append(head, make([]byte, len(have))...)
	for i, h := range have {
		if h {
			out[liveHeader+i] = 1
		}
	}
	if err := durable.WriteFile(path, out, 0o600); err != nil {
		return nil, fmt.Errorf("live marks: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("live marks: %w", err)
	}
	return &liveMarks{f: f}, nil
}

// liveHead is the header a live marks file of src has in this boot.
func liveHead(src Source) ([]byte, error) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil || len(bytes.TrimSpace(boot)) != 36 {
		return nil, fmt.Errorf("live marks: the kernel's boot_id: %v", err)
	}
	head := make([]byte, liveHeader)
	copy(head, liveMagic)
	copy(head[8:], bytes.TrimSpace(boot))
	le := binary.LittleEndian
	le.PutUint64(head[44:], uint64(src.SizeBytes()))
	le.PutUint64(head[52:], uint64(src.NumBlocks()))
	le.PutUint64(head[60:], uint64(src.BlockSize()))
	return head, nil
}

// mark records block i as marked.
func (l *liveMarks) mark(i int64) error {
	if _, err := l.f.WriteAt([]byte{1}, liveHeader+i); err != nil {
		return fmt.Errorf("live marks: %w", err)
	}
	return nil
}

// forget empties the file: none of its marks counts any more.
func (l *liveMarks) forget() { _ = l.f.Truncate(0) }

func (l *liveMarks) close() error { return l.f.Close() }

// RemoveRecord removes the hydration record at recordPath and its live
// marks (the volume is ready or deleted). Absent files are fine.
func RemoveRecord(recordPath string) error {
	var first error
	for _, p := range []string{recordPath, livePath(recordPath)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) && first == nil {
			first = err
		}
	}
	return first
}
