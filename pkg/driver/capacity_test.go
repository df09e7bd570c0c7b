package driver

import (
	"bytes"
	"os"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/pkg/backend"
)

// TestCapacityCountsSharedData: a snapshot of a volume holding 256 MiB
// costs nothing when taken, but GetCapacity counts what rewriting the
// volume may allocate (issue 25); deleting it gives the room back. The
// bases-dropped counter is published from the start.
func TestCapacityCountsSharedData(t *testing.T) {
	e := newNodeEnv(t)
	lv := e.volume("pvc-cap", nil)
	path, _ := e.pool.DataPath(lv.ID)
	if err := os.WriteFile(path, bytes.Repeat([]byte{1}, 256<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	capacity := func() int64 {
		t.Helper()
		r, err := e.d.controllerService().GetCapacity(e.ctx, &csi.GetCapacityRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetAvailableCapacity()
	}
	before := capacity()
	snap, err := e.pool.Create(e.ctx, backend.CreateOptions{Name: "snap-cap", Kind: backend.KindSnapshot, SourceID: lv.ID})
	if err != nil {
		t.Fatal(err)
	}
	if with := capacity(); before-with < 255<<20 {
		t.Errorf("GetCapacity %d with a snapshot of 256 MiB, %d without: its cost is not counted", with, before)
	}
	if err := e.pool.Delete(e.ctx, snap.ID); err != nil {
		t.Fatal(err)
	}
	unix.Sync() // XFS frees a deleted file's blocks in the background
	if after := capacity(); after < before-1<<20 {
		t.Errorf("GetCapacity %d after the snapshot's deletion, %d before it", after, before)
	}
	if fams := scrape(t, e.d); fams["chainvol_backup_bases_dropped_total"] == nil {
		t.Error("chainvol_backup_bases_dropped_total missing from /metrics")
	}
}
