package backend

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/internal/testutil"
)

// TestPowerLossCreate cuts the power (testutil.PowerLoss: XFS shut down
// without writing its log, then mounted again) at each step of a
// snapshot's and a clone's create, and right after Create returned. The
// pool must recover whole (checkPool: every record ready, every data file
// of its size and its source's content, no file without a record); the
// new lvol must be there once its record was committed, with its
// source's bytes, and absent before. It is the rule Create's fsyncs serve
// (doc.go): the data file and lvols/ are fsynced before the one commit of
// the record, and nothing else is needed (docs/BENCHMARKS.md, session 10).
func TestPowerLossCreate(t *testing.T) {
	mnt := testutil.LoopFS(t, "xfs", 1<<30)
	for _, kind := range []Kind{KindSnapshot, KindVolume} {
		for _, step := range []string{"create:synced", "create:published", "create:ready", "returned"} {
			t.Run(string(kind)+"/"+step, func(t *testing.T) {
				dir := filepath.Join(mnt, string(kind)+"-"+strings.ReplaceAll(step, ":", "-"))
				powerLossCreate(t, mnt, dir, kind, step)
				p := openPool(t, dir)
				_, err := p.GetByName(context.Background(), kind, "new")
				switch committed := step == "create:ready" || step == "returned"; {
				case committed && err != nil:
					t.Fatalf("after a power loss at %s the new %s is lost: %v", step, kind, err)
				case !committed && !errors.Is(err, ErrNotFound):
					t.Fatalf("after a power loss at %s, before its record was committed, the new %s: %v", step, kind, err)
				}
			})
		}
	}
}

// powerLossCreate makes a pool in dir holding one volume with random
// content (durable: synced), creates an lvol "new" of kind from it with
// the power cut at step ("returned": once Create returned), mounts the
// filesystem again and checks the pool (checkPool).
func powerLossCreate(t *testing.T, mnt, dir string, kind Kind, step string) {
	p, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	v := mustCreate(t, p, CreateOptions{Name: "src", Kind: KindVolume, SizeBytes: 64 << 20})
	vPath, _ := p.DataPath(v.ID)
	for _, off := range []int64{0, 20 << 20, 60 << 20} {
		writeRandom(t, vPath, off, 4<<20)
	}
	if v, err = p.SetLabels(context.Background(), v.ID, shaLabels(t, vPath)); err != nil {
		t.Fatal(err)
	}
	unix.Sync()
	size := v.SizeBytes
	if kind == KindVolume {
		size += 8192 // a clone grown past its source
	}
	err = createUntil(t, mnt, p, step, CreateOptions{Name: "new", Kind: kind, SourceID: v.ID, SizeBytes: size, Labels: v.Labels})
	if step == "returned" {
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		testutil.PowerLoss(t, mnt)
	} else if !errors.Is(err, errPowerLoss) {
		t.Fatalf("Create never reached step %s (err %v)", step, err)
	}
	_ = p.Close()
	testutil.Remount(t, mnt)
	checkPool(t, dir)
}

// errPowerLoss is what createUntil returns when the power was cut.
var errPowerLoss = errors.New("power lost")

// createUntil runs p.Create(o), cutting the power at step: the pool's
// process stops there, as it would (a panic through Create to here: its
// deferred unlocks run, nothing else of it), so that nothing reads the
// pool's metadata from a filesystem that is gone (bbolt's mmap faults).
func createUntil(t *testing.T, mnt string, p *FilePool, step string, o CreateOptions) (err error) {
	crashHook = func(s string) {
		if s == step {
			testutil.PowerLoss(t, mnt)
			panic(errPowerLoss)
		}
	}
	defer func() {
		crashHook = nil
		if r := recover(); r != nil {
			if r != errPowerLoss {
				panic(r)
			}
			err = errPowerLoss
		}
	}()
	_, err = p.Create(context.Background(), o)
	return err
}
