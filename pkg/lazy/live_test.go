package lazy

import (
	"bytes"
	"os"
	"syscall"
	"testing"
	"time"
)

// A block written and not flushed when its server died counts as marked
// for the next server of the same boot (a takeover: the application's
// page cache holds the write, which must not be fetched over), and not
// after a reboot (the data may not have reached the disk), nor after a
// failed fdatasync (its pages may be gone).
func TestLiveMarksOfOneBoot(t *testing.T) {
	s := newFaultSource(t, 4<<14, 1<<14)
	im, data, rec := newWritable(t, s, time.Second)
	want := bytes.Repeat([]byte{7}, 1<<14)
	if _, err := im.WriteAt(want, 1<<14); err != nil {
		t.Fatal(err)
	}
	// killed: no Flush, no Close; the record marks nothing.
	next := reopen(t, s, data, rec, time.Second)
	got := make([]byte, 1<<14)
	if _, err := next.ReadAt(got, 1<<14); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the next server of this boot read block 1 as %x..., %v: the unflushed write was fetched over", got[:4], err)
	}
	if r := s.reads.Load(); r != 0 {
		t.Fatalf("%d fetches: block 1 was fetched again", r)
	}

	// Another boot: the live marks are not trusted.
	raw, err := os.ReadFile(livePath(rec))
	if err != nil {
		t.Fatal(err)
	}
	raw[8] ^= 1 // the boot_id
	if err := os.WriteFile(livePath(rec), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if h := reopen(t, s, data, rec, time.Second).have[1]; h {
		t.Fatal("live marks of another boot were trusted")
	}

	// A failed fdatasync forgets them.
	im2 := reopen(t, s, data, rec, time.Second)
	if _, err := im2.WriteAt(want, 2<<14); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fdatasync = syscall.Fdatasync })
	fdatasync = func(int) error { return syscall.EIO }
	if err := im2.Flush(); err == nil {
		t.Fatal("Flush with a failing fdatasync: no error")
	}
	fdatasync = syscall.Fdatasync
	if h := reopen(t, s, data, rec, time.Second).have[2]; h {
		t.Fatal("a mark written before a failed fdatasync was trusted by the next server")
	}
}
