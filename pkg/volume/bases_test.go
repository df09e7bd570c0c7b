package volume

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/backend"
)

// TestSweepBases: the sweep keeps exactly the backup bases that still
// serve (the newest uploaded base of each chain whose volume exists;
// uploads running or failed; anything not yet reported to the CO; local
// snapshots), whatever the number of sweeps running at once.
func TestSweepBases(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	m := NewManager(pool, Config{StateDir: t.TempDir(), Node: "node-1"})
	volume := func(name string) backend.LVol {
		lv, err := pool.Create(ctx, backend.CreateOptions{Name: name, Kind: backend.KindVolume, SizeBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		return lv
	}
	snapshot := func(name string, src backend.LVol, labels map[string]string) string {
		lv, err := pool.Create(ctx, backend.CreateOptions{Name: name, Kind: backend.KindSnapshot, SourceID: src.ID,
			SizeBytes: src.SizeBytes, Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		return lv.ID
	}
	v := volume("v")
	w := volume("w")
	base := func(name string, src backend.LVol, chain string, state UploadState, doneAt string, reported bool) string {
		r := Record{Hidden: true, BackupRef: ReadID("backup:offsite:" + chain + "@" + name), Upload: state, Unreported: !reported}
		if doneAt != "" {
			r.UploadDoneAt, _ = time.Parse("20060102T150405.000000000Z", doneAt)
		}
		return snapshot(name, src, r.Encode())
	}
	keep := []string{v.ID,
		base("b", v, "c1", Uploaded, "20261130T000002.000000000Z", true), // newest of c1
		base("c", v, "c1", Uploading, "", false),
		base("e", w, "c3", Uploaded, "20261130T000001.000000000Z", false), // not reported yet
		base("f", w, "c4", UploadFailed, "", false),
		base("g", v, "c1", Uploaded, "20261130T000000.000000000Z", false), // older, unreported
		snapshot("h", w, nil), // a local snapshot
	}
	gone := []string{
		base("a", v, "c1", Uploaded, "20261130T000001.000000000Z", true), // superseded by b
		base("d", w, "c2", Uploaded, "20261130T000001.000000000Z", true), // its volume is deleted
	}
	if err := pool.Delete(ctx, w.ID); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); m.SweepBases(ctx) }()
	}
	wg.Wait()
	lvols, err := pool.List(ctx, "")
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
