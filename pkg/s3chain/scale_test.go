package s3chain_test

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// BenchmarkScale measures how the cost of the engine's whole-chain and
// whole-target operations grows with the work (issue 29, "scale"), on
// synthetic chains in the in-memory store: for each operation, wall and
// CPU time and peak live heap (beyond what was live before: the store's
// objects) at a few sizes, the growth exponents fitted to them (log-log least squares:
// 1 is linear, 0 independent of the size) and the figures at the largest
// size. Run: go test -run '^$' -bench Scale -benchtime 1x ./pkg/s3chain/
// (about a minute; docs/BENCHMARKS.md records a run).
func BenchmarkScale(b *testing.B) {
	for _, c := range []scaleCase{manifestScale(), gcScale(), gcHistoryScale(), listScale(), beforeScale()} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				runScale(b, c)
			}
		})
	}
}

// scaleCase is one operation measured at several sizes: setup builds the
// target of size n and returns the operation to measure.
type scaleCase struct {
	name, unit string
	sizes      []int
	setup      func(b *testing.B, n int) func() error
}

type scalePoint struct {
	n    int
	took time.Duration
	cpu  time.Duration // user+sys of the process: steadier than took on a shared machine
	peak uint64        // bytes of live heap beyond the baseline
	// retained is the live heap beyond the baseline after op and a GC
	// (caches such as the Repo's chain configs).
	retained uint64
	alloc    uint64 // bytes allocated
}

func runScale(b *testing.B, c scaleCase) {
	var pts []scalePoint
	for _, n := range c.sizes {
		op := c.setup(b, n)
		p := measure(b, op)
		p.n = n
		pts = append(pts, p)
		b.Logf("%s: %d %s: %v (CPU %v), peak heap %.1f MiB beyond the store (retained %.1f MiB), %.0f B allocated per %s",
			c.name, n, c.unit, p.took.Round(time.Millisecond), p.cpu.Round(time.Millisecond), float64(p.peak)/(1<<20),
			float64(p.retained)/(1<<20), float64(p.alloc)/float64(n), c.unit)
	}
	last := pts[len(pts)-1]
	tExp := fitExponent(pts, func(p scalePoint) float64 { return p.took.Seconds() })
	cExp := fitExponent(pts, func(p scalePoint) float64 { return p.cpu.Seconds() })
	mExp := fitExponent(pts, func(p scalePoint) float64 { return float64(p.peak) })
	b.Logf("%s: exponents: time %.2f, CPU %.2f, peak memory %.2f; at %d %s: %v (CPU %v), %.1f MiB",
		c.name, tExp, cExp, mExp, last.n, c.unit, last.took.Round(time.Millisecond), last.cpu.Round(time.Millisecond), float64(last.peak)/(1<<20))
	b.ReportMetric(tExp, "time-exp")
	b.ReportMetric(cExp, "cpu-exp")
	b.ReportMetric(mExp, "mem-exp")
	b.ReportMetric(last.took.Seconds(), "s-at-max")
	b.ReportMetric(float64(last.peak)/(1<<20), "MiB-at-max")
	b.ReportMetric(float64(last.alloc)/float64(last.n), "B/"+c.unit)
}

// measure runs op twice: once after a GC for its wall time, CPU time and
// allocations, and once with the GC target at 2% (a collection every 2%
// of heap growth) for its peak live heap, the largest "/gc/heap/live"
// (the heap marked live by a collection) above the level before. With the
// default target the garbage the GC leaves until the heap doubles would
// count, and that grows with the store's own objects.
func measure(b *testing.B, op func() error) scalePoint {
	runtime.GC()
	alloc0 := totalAlloc()
	start, cpu0 := time.Now(), processCPU()
	err := op()
	p := scalePoint{took: time.Since(start), cpu: processCPU() - cpu0, alloc: totalAlloc() - alloc0}
	if err != nil {
		b.Fatal(err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(2))
	runtime.GC()
	base := readMetric("/gc/heap/live:bytes")
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(100 * time.Microsecond)
		defer t.Stop()
		for {
			if h := readMetric("/gc/heap/live:bytes"); h > peak.Load() {
				peak.Store(h)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	err = op()
	close(stop)
	wg.Wait()
	if err != nil {
		b.Fatal(err)
	}
	if pk := peak.Load(); pk > base {
		p.peak = pk - base
	}
	runtime.GC()
	if live := readMetric("/gc/heap/live:bytes"); live > base {
		p.retained = live - base
	}
	return p
}

func readMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// heapLive is the heap's object bytes (live and not yet swept).
func heapLive() uint64   { return readMetric("/memory/classes/heap/objects:bytes") }
func totalAlloc() uint64 { return readMetric("/gc/heap/allocs:bytes") }

// fitExponent is the slope of log(y) against log(n), least squares.
func fitExponent(pts []scalePoint, y func(scalePoint) float64) float64 {
	var sx, sy, sxx, sxy float64
	for _, p := range pts {
		x, v := math.Log(float64(p.n)), math.Log(max(y(p), 1e-9))
		sx, sy, sxx, sxy = sx+x, sy+v, sxx+x*x, sxy+x*v
	}
	k := float64(len(pts))
	return (k*sxy - sx*sy) / (k*sxx - sx*sx)
}

var scaleEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const scaleBS = s3chain.DefaultBlockSize

// writeBackups stores backups of chain, each a volume of blocks data
// blocks.
func writeBackups(b *testing.B, r *s3chain.Repo, chain string, backups, blocks int, objects bool) {
	ctx := context.Background()
	idx := make([]int64, blocks)
	for i := range idx {
		idx[i] = int64(i)
	}
	parent := ""
	for k := range backups {
		id := fmt.Sprintf("b%07d", k)
		_, err := s3chain.WriteSyntheticBackupForTest(ctx, r, s3chain.SyntheticBackup{Chain: chain, ID: id, Parent: parent,
			CreatedAt: scaleEpoch.Add(time.Duration(k) * time.Minute), SizeBytes: int64(blocks) * scaleBS,
			Blocks: idx, Seed: uint64(k % 2), Objects: objects && k < 2}, scaleBS)
		if err != nil {
			b.Fatal(err)
		}
		parent = id
	}
}

// manifestScale: reading (GET, decode, MAC) the manifest of one backup of
// n data blocks; 1 Mi blocks is a 2 TiB volume at 2 MiB blocks.
func manifestScale() scaleCase {
	return scaleCase{name: "manifest", unit: "block", sizes: []int{1 << 16, 1 << 18, 1 << 20},
		setup: func(b *testing.B, n int) func() error {
			st := storetest.NewMem()
			writeBackups(b, newRepo(b, st, nil), "scale/m", 1, n, false)
			r := newRepo(b, st, nil) // a reader with nothing cached
			return func() error {
				_, err := r.Manifest(context.Background(), "scale/m", "b0000000")
				return err
			}
		}}
}

// gcScale: gc of a target of 1 M blocks (all referenced: nothing to
// delete) in n chains of 1 M / n blocks: its memory should not depend on
// the number of chains, and its time hardly (the same blocks, more chains).
func gcScale() scaleCase {
	const total = 1 << 20
	return scaleCase{name: "gc", unit: "chain", sizes: []int{100, 1000, 10000},
		setup: func(b *testing.B, n int) func() error {
			st := storetest.NewMem()
			w := newRepo(b, st, nil)
			for c := range n {
				writeBackups(b, w, fmt.Sprintf("scale/c%05d", c), 1, total/n, true)
			}
			r := newRepo(b, st, nil)
			return func() error {
				st, err := r.GC(context.Background(), s3chain.GCOptions{})
				if err == nil && (st.Chains != n || st.Blocks != total/n*n) {
					err = fmt.Errorf("gc saw %d chains, %d blocks; want %d, %d", st.Chains, st.Blocks, n, total/n*n)
				}
				return err
			}
		}}
}

// gcHistoryScale: gc of one chain of n backups of 10,000 blocks each (two
// sets of blocks, alternating): its memory should follow the chain's
// distinct blocks, not the sum of its manifests' lists.
func gcHistoryScale() scaleCase {
	return scaleCase{name: "gc-history", unit: "backup", sizes: []int{10, 30, 100},
		setup: func(b *testing.B, n int) func() error {
			st := storetest.NewMem()
			writeBackups(b, newRepo(b, st, nil), "scale/h", n, 10000, true)
			r := newRepo(b, st, nil)
			return func() error {
				st, err := r.GC(context.Background(), s3chain.GCOptions{})
				if err == nil && (st.Blocks != 2*10000 || st.DeletedBlocks != 0) {
					err = fmt.Errorf("gc saw %d blocks, deleted %d; want 20000, 0", st.Blocks, st.DeletedBlocks)
				}
				return err
			}
		}}
}

// listScale: every backup of a target, as ListSnapshots reads it (Chains,
// then Backups of each), n backups in chains of 100.
func listScale() scaleCase {
	return scaleCase{name: "list", unit: "backup", sizes: []int{10000, 30000, 100000},
		setup: func(b *testing.B, n int) func() error {
			st := storetest.NewMem()
			w := newRepo(b, st, nil)
			for c := range n / 100 {
				writeBackups(b, w, fmt.Sprintf("scale/l%05d", c), 100, 1, false)
			}
			r := newRepo(b, st, nil)
			return func() error {
				ctx := context.Background()
				chains, err := r.Chains(ctx)
				total := 0
				for _, c := range chains {
					ms, err := r.Backups(ctx, c)
					if err != nil {
						return err
					}
					total += len(ms)
				}
				if err == nil && total != n {
					err = fmt.Errorf("listed %d backups, want %d", total, n)
				}
				return err
			}
		}}
}

// beforeScale: resolving "@before:T" (T between the two oldest backups)
// on a chain of n backups of 1,024 blocks (2 GiB at 2 MiB blocks).
func beforeScale() scaleCase {
	return scaleCase{name: "before", unit: "backup", sizes: []int{100, 300, 1000},
		setup: func(b *testing.B, n int) func() error {
			st := storetest.NewMem()
			writeBackups(b, newRepo(b, st, nil), "scale/b", n, 1024, false)
			r := newRepo(b, st, nil)
			ref, err := target.ParseRef("scale/b@before:" + scaleEpoch.Add(30*time.Second).Format(time.RFC3339))
			if err != nil {
				b.Fatal(err)
			}
			return func() error {
				m, err := target.Select(context.Background(), r, ref)
				if err == nil && m.ID != "b0000000" {
					err = fmt.Errorf("before: picked %s", m.ID)
				}
				return err
			}
		}}
}
