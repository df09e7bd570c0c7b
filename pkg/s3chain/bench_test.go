package s3chain_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

const (
	benchSize    = 128 << 20
	benchBS      = 1 << 20
	benchWorkers = 8
)

// benchRepo is a file store in a temp dir holding one full backup of a
// random (incompressible) benchSize volume.
func benchRepo(b *testing.B, key []byte) (*s3chain.Repo, store.Store, *testVolume, *s3chain.Manifest) {
	dir := b.TempDir()
	vol := newTestVolume(b, dir, benchSize, benchBS, 5)
	f, _ := os.OpenFile(vol.path, os.O_RDWR, 0)
	vol.writeAt(f, 0, benchSize, false)
	f.Close()
	os.Mkdir(filepath.Join(dir, "repo"), 0o700)
	st, err := store.Open(context.Background(), "file://"+filepath.Join(dir, "repo"), store.Credentials{})
	if err != nil {
		b.Fatal(err)
	}
	r := newRepo(b, st, key)
	m, _, err := r.Backup(context.Background(), s3chain.BackupOptions{Chain: "bench/vol", Source: vol.path, BlockSize: benchBS})
	if err != nil {
		b.Fatal(err)
	}
	return r, st, vol, m
}

// peakHeap samples the heap in use every 5 ms until stop is called and
// returns the largest growth over the heap at the start, in bytes.
func peakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	return func() uint64 { close(done); wg.Wait(); return peak.Load() - min(peak.Load(), base.HeapInuse) }
}

// BenchmarkRestore restores a 128 MiB backup (1 MiB blocks, 8 workers)
// into a fresh file and measures, in the same run, the raw baseline: a
// plain parallel GET of the same objects and a plain sequential write of
// the same bytes. ratio_vs_min compares with the slower of the two (a
// perfectly overlapped pipeline), ratio_vs_serial with their sum.
func BenchmarkRestore(b *testing.B) {
	for _, enc := range []bool{false, true} {
		b.Run(fmt.Sprintf("encrypted=%v", enc), func(b *testing.B) {
			var key []byte
			if enc {
				key = testKey(1)
			}
			r, store, vol, m := benchRepo(b, key)
			dir := b.TempDir()
			var tRestore, tGet, tWrite time.Duration
			var peak uint64
			for b.Loop() {
				dest := filepath.Join(dir, "t")
				runtime.GC()
				stop := peakHeap()
				start := time.Now()
				if _, _, err := r.Restore(context.Background(), s3chain.RestoreOptions{Chain: "bench/vol", BackupID: m.ID, Destination: dest, Workers: benchWorkers}); err != nil {
					b.Fatal(err)
				}
				tRestore += time.Since(start)
				peak = max(peak, stop())
				os.Remove(dest)
				tGet += baselineGet(b, store, m)
				tWrite += baselineWrite(b, filepath.Join(dir, "w"), vol.path)
			}
			mb := float64(b.N) * benchSize / (1 << 20)
			restore, get, write := mb/tRestore.Seconds(), mb/tGet.Seconds(), mb/tWrite.Seconds()
			b.ReportMetric(restore, "restore_MB/s")
			b.ReportMetric(get, "get_MB/s")
			b.ReportMetric(write, "write_MB/s")
			b.ReportMetric(restore/min(get, write), "ratio_vs_min")
			b.ReportMetric(restore/(1/(1/get+1/write)), "ratio_vs_serial")
			b.ReportMetric(float64(peak)/(1<<20), "peak_heap_growth_MB")
		})
	}
}

func baselineGet(b *testing.B, st store.Store, m *s3chain.Manifest) time.Duration {
	start := time.Now()
	var g errgroup.Group
	g.SetLimit(benchWorkers)
	for _, blk := range m.Blocks {
		g.Go(func() error {
			_, err := st.Get(context.Background(), s3chain.BlockKey(m.Chain, blk.Digest))
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// baselineWrite writes the bytes of src sequentially to a new file at
// path, in blocks, with a final fsync like Restore's; only the writing is
// timed. The bytes are read first and dropped after, so they do not
// inflate the heap the restore is measured in.
func baselineWrite(b *testing.B, path, src string) time.Duration {
	data, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	for off := 0; off < len(data); off += benchBS {
		if _, err := f.Write(data[off : off+benchBS]); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	os.Remove(path)
	return time.Since(start)
}

// BenchmarkBackupFull backs up the 128 MiB random volume into a new chain
// each time, beside a baseline of a sequential read of the source and a
// parallel PUT of the same raw blocks.
func BenchmarkBackupFull(b *testing.B) {
	r, store, vol, _ := benchRepo(b, nil)
	var tBackup, tBase time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if _, _, err := r.Backup(context.Background(), s3chain.BackupOptions{Chain: fmt.Sprintf("bench/full-%d", i), Source: vol.path, BlockSize: benchBS, Workers: benchWorkers}); err != nil {
			b.Fatal(err)
		}
		tBackup += time.Since(start)
		start = time.Now()
		data, _ := os.ReadFile(vol.path)
		var g errgroup.Group
		g.SetLimit(benchWorkers)
		for off := 0; off < len(data); off += benchBS {
			g.Go(func() error {
				return store.Put(context.Background(), fmt.Sprintf("baseline/%d/%d", i, off), data[off:off+benchBS])
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		tBase += time.Since(start)
	}
	mb := float64(b.N) * benchSize / (1 << 20)
	b.ReportMetric(mb/tBackup.Seconds(), "backup_MB/s")
	b.ReportMetric(mb/tBase.Seconds(), "baseline_MB/s")
	b.ReportMetric(tBase.Seconds()/tBackup.Seconds(), "ratio")
}

// BenchmarkBackupIncremental changes 1% of a 256 MiB volume on a reflink
// XFS (random 1 MiB writes) and takes an incremental backup, with FIEMAP
// tracking (fiemap=true) or digest comparison; it reports the time and the
// bytes read and uploaded beside the full backup's time.
func BenchmarkBackupIncremental(b *testing.B) {
	mnt := testutil.LoopFS(b, "xfs", 2<<30)
	for _, useBase := range []bool{true, false} {
		b.Run(fmt.Sprintf("fiemap=%v", useBase), func(b *testing.B) {
			dir, _ := os.MkdirTemp(mnt, "b")
			defer os.RemoveAll(dir)
			const size = 256 << 20
			vol := newTestVolume(b, dir, size, benchBS, 3)
			f, _ := os.OpenFile(vol.path, os.O_RDWR, 0)
			vol.writeAt(f, 0, size, false)
			f.Close()
			os.Mkdir(filepath.Join(dir, "repo"), 0o700)
			st, _ := store.Open(context.Background(), "file://"+filepath.Join(dir, "repo"), store.Credentials{})
			r := newRepo(b, st, nil)
			prev := filepath.Join(dir, "snap0")
			vol.snapshot(prev, true)
			m, full, err := r.Backup(context.Background(), s3chain.BackupOptions{Chain: "bench/inc", Source: prev, BlockSize: benchBS})
			if err != nil {
				b.Fatal(err)
			}
			var tInc time.Duration
			var scanned, uploaded int64
			for i := 1; b.Loop(); i++ {
				b.StopTimer()
				vol.change(size/100/benchBS, benchBS) // ~1% of the bytes
				snap := filepath.Join(dir, fmt.Sprintf("snap%d", i))
				vol.snapshot(snap, true)
				b.StartTimer()
				o := s3chain.BackupOptions{Chain: "bench/inc", Source: snap, Parent: m.ID}
				if useBase {
					o.Base = prev
				}
				start := time.Now()
				var st s3chain.BackupStats
				if m, st, err = r.Backup(context.Background(), o); err != nil {
					b.Fatal(err)
				}
				tInc += time.Since(start)
				scanned += st.ScannedBytes
				uploaded += st.UploadedBytes
				os.Remove(prev)
				prev = snap
			}
			n := float64(b.N)
			b.ReportMetric(float64(tInc.Milliseconds())/n, "incr_ms")
			b.ReportMetric(float64(full.Duration.Milliseconds()), "full_ms")
			b.ReportMetric(float64(scanned)/n/(1<<20), "read_MB")
			b.ReportMetric(float64(uploaded)/n/(1<<20), "uploaded_MB")
		})
	}
}
