package driver

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// TestFreezeStaged: while frozen, a write from another goroutine blocks;
// it completes after thaw. A second freeze is Aborted (volume.ErrFrozen); an unstaged lvol
// gets a no-op thaw.
func TestFreezeStaged(t *testing.T) {
	e := newNodeEnv(t)
	lv := e.volume("frozen", nil)
	staging := e.path("stage")

	thaw, err := e.d.freezeStaged(e.ctx, lv.ID) // not staged: nothing to freeze
	mustOK(t, err)
	thaw()
	_, err = e.d.freezeStaged(e.ctx, "vol-unknown") // sentinels, mapped by the caller's family
	wantCode(t, snapshotError("", err), codes.NotFound)

	mustOK(t, e.stage(lv.ID, staging, mountCap("xfs", snw)))
	thaw, err = e.d.freezeStaged(e.ctx, lv.ID)
	mustOK(t, err)
	defer thaw()
	_, err = e.d.freezeStaged(e.ctx, lv.ID)
	wantCode(t, snapshotError("", err), codes.Aborted, "already frozen")

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

// TestStageCloneOfStagedXFS: a reflink clone taken under freezeStaged (as
// CreateSnapshot does) shares its source's XFS UUID and still stages on the
// same node while the source is staged (nouuid), holding the frozen data;
// both mount after reflinking changed their loop devices' sector size.
func TestStageCloneOfStagedXFS(t *testing.T) {
	e := newNodeEnv(t)
	src := e.volume("src", volume.Record{FSType: "xfs"}.Encode())
	srcStage, cloneStage := e.path("src"), e.path("clone")
	mustOK(t, e.stage(src.ID, srcStage, mountCap("", snw)))
	mustOK(t, os.WriteFile(filepath.Join(srcStage, "f"), []byte("before snapshot"), 0o644))

	thaw, err := e.d.freezeStaged(e.ctx, src.ID)
	mustOK(t, err)
	clone, err := e.pool.Create(e.ctx, backend.CreateOptions{Name: "clone", Kind: backend.KindVolume,
		SourceID: src.ID, Labels: volume.Record{FSType: "xfs", RestoredFrom: volume.ReadRef("test")}.Encode()})
	thaw()
	mustOK(t, err)

	mustOK(t, e.stage(clone.ID, cloneStage, mountCap("", snw)))
	if got, _ := os.ReadFile(filepath.Join(cloneStage, "f")); string(got) != "before snapshot" {
		t.Errorf("clone reads %q, want the data written before the freeze", got)
	}
	mustOK(t, e.unstage(clone.ID, cloneStage))

	// Reflinked, the source's loop device comes back with 4 KiB sectors.
	mustOK(t, e.unstage(src.ID, srcStage))
	mustOK(t, e.stage(src.ID, srcStage, mountCap("", snw)))
	if got, _ := os.ReadFile(filepath.Join(srcStage, "f")); string(got) != "before snapshot" {
		t.Errorf("source reads %q after restaging", got)
	}
	mustOK(t, e.unstage(src.ID, srcStage))
}
