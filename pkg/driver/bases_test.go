package driver

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// TestSweepBases: the sweep keeps exactly the backup bases that still
// serve (the newest uploaded base of each chain whose volume exists;
// uploads running or failed; anything not yet reported to the CO; local
// snapshots), whatever the number of sweeps running at once.
func TestSweepBases(t *testing.T) {
	e := newNodeEnv(t)
	v := e.volume("v", nil)
	w := e.volume("w", nil)
	base := func(name string, src backend.LVol, chain string, state volume.UploadState, doneAt string, reported bool) string {
		r := volume.Record{Hidden: true, BackupRef: "backup:offsite:" + chain + "@" + name, Upload: state, Unreported: !reported}
		if doneAt != "" {
			r.UploadDoneAt, _ = time.Parse("20060102T150405.000000000Z", doneAt)
		}
		return e.snapshot(name, src, r.Encode())
	}
	keep := []string{v.ID,
		base("b", v, "c1", volume.Uploaded, "20261130T000002.000000000Z", true), // newest of c1
		base("c", v, "c1", volume.Uploading, "", false),
		base("e", w, "c3", volume.Uploaded, "20261130T000001.000000000Z", false), // not reported yet
		base("f", w, "c4", volume.UploadFailed, "", false),
		base("g", v, "c1", volume.Uploaded, "20261130T000000.000000000Z", false), // older, unreported
		e.snapshot("h", w, nil), // a local snapshot
	}
	gone := []string{
		base("a", v, "c1", volume.Uploaded, "20261130T000001.000000000Z", true), // superseded by b
		base("d", w, "c2", volume.Uploaded, "20261130T000001.000000000Z", true), // its volume is deleted
	}
	if err := e.pool.Delete(e.ctx, w.ID); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); e.d.sweepBases(e.ctx) }()
	}
	wg.Wait()
	lvols, err := e.pool.List(e.ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, lv := range lvols {
		left = append(left, lv.ID)
	}
	for _, id := range keep {
		if !slices.Contains(left, id) {
			t.Errorf("sweep deleted %s", id)
		}
	}
	for _, id := range gone {
		if slices.Contains(left, id) {
			t.Errorf("sweep kept %s", id)
		}
	}
}

// snapshot takes a snapshot lvol of src called name with labels.
func (e *nodeEnv) snapshot(name string, src backend.LVol, labels map[string]string) string {
	e.t.Helper()
	lv, err := e.pool.Create(e.ctx, backend.CreateOptions{Name: name, Kind: backend.KindSnapshot, SourceID: src.ID,
		SizeBytes: src.SizeBytes, Labels: labels})
	if err != nil {
		e.t.Fatal(err)
	}
	return lv.ID
}
