package directio

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// WriteAt puts the same bytes in the file whichever way it writes them:
// aligned data directly, unaligned data through the aligned buffer, an
// unaligned offset or length buffered; the buffered descriptor reads them
// back (the page cache stays coherent with the direct writes).
func TestWriteAt(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := Open(f)
	if d != nil {
		defer d.Close()
	}
	t.Logf("O_DIRECT descriptor: %v", d != nil)
	want := make([]byte, 5*Align)
	for i := range want {
		want[i] = byte(i*7 + 3)
	}
	if err := f.Truncate(int64(len(want))); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(make([]byte, len(want)), 0); err != nil { // the zeros in the page cache first
		t.Fatal(err)
	}
	aligned := AlignedBuf(2 * Align)
	copy(aligned, want[:2*Align])
	unaligned := append([]byte{0}, want[2*Align:4*Align]...)[1:]
	buf := AlignedBuf(2 * Align)
	for _, w := range []struct {
		data []byte
		off  int64
	}{{aligned, 0}, {unaligned, 2 * Align}, {want[4*Align : 5*Align-1], 4 * Align}, {want[5*Align-1:], 5*Align - 1}} {
		if err := WriteAt(d, f, w.data, w.off, buf); err != nil {
			t.Fatalf("write at %d: %v", w.off, err)
		}
	}
	got := make([]byte, len(want))
	if _, err := f.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("file holds other bytes than written")
	}
}
