package fiemap

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/internal/testutil"
)

const mib = 1 << 20

// TestWalkReflink: on a real XFS, a file with data at 0 and 3 MiB (a hole
// between) maps to two written extents; its reflink copy maps to the same
// device bytes, flagged Shared, until the copy rewrites one; a bounded
// Walk stops at its size; more than one batch of extents is read whole.
func TestWalkReflink(t *testing.T) {
	mnt := testutil.LoopFS(t, "xfs", 512*mib)
	a := create(t, filepath.Join(mnt, "a"))
	write(t, a, 0, mib)
	write(t, a, 3*mib, mib)
	ea := walk(t, a, math.MaxInt64)
	if len(ea) != 2 || ea[0].Logical != 0 || ea[1].Logical != 3*mib || ea[1].Flags&Last == 0 {
		t.Fatalf("extents %+v, want two: at 0 and 3 MiB, the last flagged Last", ea)
	}
	if got := walk(t, a, mib); len(got) != 1 {
		t.Fatalf("Walk to 1 MiB: %+v, want the first extent only", got)
	}
	b := create(t, filepath.Join(mnt, "b"))
	if err := unix.IoctlFileClone(int(b.Fd()), int(a.Fd())); err != nil {
		t.Fatalf("reflink: %v", err)
	}
	eb := walk(t, b, math.MaxInt64)
	for i, e := range walk(t, a, math.MaxInt64) {
		if e.Flags&Shared == 0 || eb[i].Flags&Shared == 0 || e.Physical != eb[i].Physical || e.Length != eb[i].Length {
			t.Fatalf("after reflink: %+v and %+v, want the same shared extents", e, eb[i])
		}
	}
	write(t, b, 3*mib, mib) // copy on write: b's second extent moves
	eb = walk(t, b, math.MaxInt64)
	if eb[len(eb)-1].Physical == ea[1].Physical || eb[len(eb)-1].Flags&Shared != 0 {
		t.Fatalf("after a rewrite: %+v still shares %+v", eb[len(eb)-1], ea[1])
	}
	c := create(t, filepath.Join(mnt, "c"))
	for i := range int64(batch + 100) { // one block every other 4 KiB: one extent each
		write(t, c, i*8192, 4096)
	}
	written := 0
	for _, e := range walk(t, c, math.MaxInt64) {
		if e.Flags&Unwritten == 0 { // XFS may preallocate the holes unwritten
			written++
		}
	}
	if written != batch+100 {
		t.Fatalf("%d written extents, want %d", written, batch+100)
	}
}

func create(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func write(t *testing.T, f *os.File, off, n int64) {
	t.Helper()
	if _, err := f.WriteAt(bytes.Repeat([]byte{byte(off>>12) | 1}, int(n)), off); err != nil {
		t.Fatal(err)
	}
}

// walk returns f's extents after a sync Walk to size.
func walk(t *testing.T, f *os.File, size int64) []Extent {
	t.Helper()
	var out []Extent
	if err := Walk(f, size, true, func(e Extent) { out = append(out, e) }); err != nil {
		t.Fatal(err)
	}
	return out
}
