package driver

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

// TestFreezeStaged: while frozen, a write from another goroutine blocks;
// it completes after thaw. A second freeze is Aborted; an unstaged lvol
// gets a no-op thaw.
func TestFreezeStaged(t *testing.T) {
	e := newNodeEnv(t)
	lv := e.volume("frozen", nil)
	staging := e.path("stage")

	thaw, err := e.d.freezeStaged(e.ctx, lv.ID) // not staged: nothing to freeze
	mustOK(t, err)
	thaw()
	_, err = e.d.freezeStaged(e.ctx, "vol-unknown")
	wantCode(t, err, codes.NotFound)

	mustOK(t, e.stage(lv.ID, staging, mountCap("xfs", snw)))
	thaw, err = e.d.freezeStaged(e.ctx, lv.ID)
	mustOK(t, err)
	defer thaw()
	_, err = e.d.freezeStaged(e.ctx, lv.ID)
	wantCode(t, err, codes.Aborted, "already frozen")

	done := make(chan error, 1)
	go func() { done <- os.WriteFile(filepath.Join(staging, "f"), []byte("after thaw"), 0o644) }()
	select {
	case err := <-done:
		t.Fatalf("write finished on a frozen filesystem (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	thaw()
	thaw() // a second call is harmless
	select {
	case err := <-done:
		mustOK(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("write still blocked after thaw")
	}
	if got, _ := os.ReadFile(filepath.Join(staging, "f")); string(got) != "after thaw" {
		t.Errorf("read back %q", got)
	}
	mustOK(t, e.unstage(lv.ID, staging))
}
