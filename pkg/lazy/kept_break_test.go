package lazy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/internal/testutil"
)

// A kept connection whose mount is gone (the driver was killed in
// NodeUnstageVolume after the unmount and before the keeper's Drop) is
// aborted by the kernel at the unmount: a takeover of it cannot serve
// anything and must say so (ErrTakeOver), not return a server whose loop
// has already ended (the volume manager would then report the volume
// served, and a NodeStageVolume would hand out the path of a file that is
// not there).
func TestTakeOverOfUnmountedConnection(t *testing.T) {
	testutil.RequireFUSE(t)
	s := newFaultSource(t, 4<<14, 1<<14)
	im, _, _ := newWritable(t, s, time.Second)
	dir := filepath.Join(t.TempDir(), "fuse")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	srv, kept, err := ServeKept(im, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.File.Close() // the keeper's copy
	if err := srv.Unmount(); err != nil {
		t.Fatal(err)
	}
	// The driver dies here: its descriptor is closed (srv's loop ended at
	// the unmount); only the keeper's copy is left.
	done := make(chan error, 1)
	go func() {
		srv2, err := TakeOver(im, kept.File, kept.Blob, dir)
		if err == nil {
			_ = srv2.Unmount()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrTakeOver) {
			t.Fatalf("TakeOver of a connection unmounted (aborted) before the kill: %v, want ErrTakeOver", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("TakeOver of an unmounted connection hangs")
	}
}
