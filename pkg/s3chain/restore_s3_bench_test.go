package s3chain_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// BenchmarkRestoreS3 restores a 512 MiB volume, half of it data (half of
// that compressible text-like bytes), with the default block size and
// workers from versitygw on loopback onto reflink XFS on a loop device,
// the path `make bench` measures, so
// that `go test -bench RestoreS3 -cpuprofile` shows where a real restore
// spends its time (docs/BENCHMARKS.md). It runs a version-2 chain
// (HMAC-SHA256 block names) and a version-3 one (keyed BLAKE3) side by
// side and reports, besides MB/s, the client's CPU time (user+sys of this
// process, which the S3 server is not part of) per GiB restored: on a
// shared machine the CPU figure holds where the wall time does not.
// Beside them, v3-null is the null restore of the v3 chain's objects
// (nullRestore), the limit `make bench` holds a restore against: the
// engine's ratio to it is v3's ns/op over v3-null's.
func BenchmarkRestoreS3(b *testing.B) {
	ctx := context.Background()
	r, st, vol := benchS3Volume(b)
	// The restore writes onto reflink XFS on a loop device, as the
	// driver's pool is in make bench.
	pool := testutil.LoopFS(b, "xfs", 2<<30)
	for _, v := range []int{2, 3} {
		chain := fmt.Sprintf("bench/v%d", v)
		if v == 2 {
			if err := s3chain.CreateV2ConfigForTest(ctx, r, chain, s3chain.DefaultBlockSize); err != nil {
				b.Fatal(err)
			}
		}
		m, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: vol.path})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("v%d", v), func(b *testing.B) {
			var total time.Duration
			cpu0 := processCPU()
			for b.Loop() {
				dest := filepath.Join(pool, "t")
				start := time.Now()
				if _, _, err := r.Restore(ctx, s3chain.RestoreOptions{Chain: chain, BackupID: m.ID, Destination: dest}); err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
				os.Remove(dest)
			}
			reportRestore(b, total, cpu0, m.AllocatedBytes)
		})
		if v == 3 {
			b.Run("v3-null", func(b *testing.B) {
				var total time.Duration
				cpu0 := processCPU()
				for b.Loop() {
					dest := filepath.Join(pool, "null")
					start := time.Now()
					nullRestore(b, st, chain, m, dest)
					total += time.Since(start)
					os.Remove(dest)
				}
				reportRestore(b, total, cpu0, m.AllocatedBytes)
			})
		}
	}
}

// reportRestore reports MB/s and the client's CPU-s per GiB of the
// restores that took total for b.N restores of allocated bytes each.
func reportRestore(b *testing.B, total, cpu0 time.Duration, allocated int64) {
	gib := float64(b.N) * float64(allocated) / (1 << 30)
	b.ReportMetric(gib*1024/total.Seconds(), "MB/s")
	b.ReportMetric((processCPU()-cpu0).Seconds()/gib, "cpu-s/GiB")
}

// processCPU is this process's user+system time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchS3Volume starts versitygw on loopback and returns a repo on it and
// a 512 MiB volume, half of it data (1 MiB of text-like bytes in every 8
// MiB besides the random data newTestVolume writes): the workload of
// BenchmarkRestoreS3 and BenchmarkBackupS3.
func benchS3Volume(b *testing.B) (*s3chain.Repo, store.Store, *testVolume) {
	srv := testutil.StartS3(b)
	st, err := store.Open(context.Background(), srv.URL("bench"), store.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	if err != nil {
		b.Fatal(err)
	}
	r := newRepo(b, st, nil)
	const size = 512 << 20
	vol := newTestVolume(b, b.TempDir(), size, s3chain.DefaultBlockSize, 9)
	f, err := os.OpenFile(vol.path, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	text := make([]byte, 1<<20)
	for i := range text {
		text[i] = "the quick brown fox jumps over a lazy dog\n"[i%42]
	}
	for off := int64(0); off < size; off += 8 << 20 {
		if _, err := f.WriteAt(text, off+3<<20); err != nil {
			b.Fatal(err)
		}
	}
	return r, st, vol
}

// BenchmarkBackupFixedCost measures what one backup costs when nothing
// changed: a 256 MiB volume on reflink XFS with 128 MiB of data, backed up
// in full to versitygw, then b.N backups of unchanged reflink snapshots,
// each with the previous snapshot as its FIEMAP base, as the driver runs
// them. It reports the wall time and the store requests of each kind per
// backup: the floor under every incremental (docs/BENCHMARKS.md).
func BenchmarkBackupFixedCost(b *testing.B) {
	srv := testutil.StartS3(b)
	ctx := context.Background()
	s3, err := store.Open(ctx, srv.URL("bench"), store.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	if err != nil {
		b.Fatal(err)
	}
	store := storetest.NewFaulty(s3)
	r := newRepo(b, store, nil)
	dir := testutil.LoopFS(b, "xfs", 1<<30)
	vol := newTestVolume(b, dir, 256<<20, s3chain.DefaultBlockSize, 11)
	prev := filepath.Join(dir, "snap-0")
	vol.snapshot(prev, true)
	m, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: "bench/fixed", Source: prev})
	if err != nil {
		b.Fatal(err)
	}
	ops := []storetest.Op{storetest.OpGet, storetest.OpPut, storetest.OpPutIfAbsent, storetest.OpStat, storetest.OpDelete, storetest.OpList}
	before := map[storetest.Op]int{}
	for _, op := range ops {
		before[op] = store.Calls(op)
	}
	n := 0
	for b.Loop() {
		n++
		snap := filepath.Join(dir, fmt.Sprintf("snap-%d", n))
		vol.snapshot(snap, true)
		if m, _, err = r.Backup(ctx, s3chain.BackupOptions{Chain: "bench/fixed", Source: snap, Parent: m.ID, Base: prev}); err != nil {
			b.Fatal(err)
		}
		os.Remove(prev)
		prev = snap
	}
	total := 0
	for _, op := range ops {
		k := store.Calls(op) - before[op]
		total += k
		b.ReportMetric(float64(k)/float64(n), string(op)+"/op")
	}
	b.ReportMetric(float64(total)/float64(n), "requests/op")
}

// nullRestore is the null restore of bench/null.go on st: every distinct
// block object of m GET with the engine's call (store.GetMaxInto),
// DefaultWorkers at a time, into an aligned buffer, and written O_DIRECT
// with each block's full length at every offset it fills in a new file of
// the image's size at dest, then fsynced; no digest, no decoding.
func nullRestore(b *testing.B, st store.Store, chain string, m *s3chain.Manifest, dest string) {
	ctx := context.Background()
	f, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_DIRECT, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(m.SizeBytes); err != nil {
		b.Fatal(err)
	}
	offsets := map[string][]int64{}
	var keys []string
	for _, blk := range m.Blocks {
		if blk.Digest == "" {
			continue
		}
		k := s3chain.BlockKey(chain, blk.Digest)
		if offsets[k] == nil {
			keys = append(keys, k)
		}
		offsets[k] = append(offsets[k], blk.Index*m.BlockSize)
	}
	bufLen := (m.BlockSize + 64 + 4095) &^ 4095
	bufs := make(chan []byte, s3chain.DefaultWorkers)
	for range s3chain.DefaultWorkers {
		bufs <- alignedTestBuf(bufLen)
	}
	var g errgroup.Group
	g.SetLimit(s3chain.DefaultWorkers)
	for _, k := range keys {
		g.Go(func() error {
			buf := <-bufs
			defer func() { bufs <- buf }()
			if _, err := store.GetMaxInto(ctx, st, k, bufLen, buf); err != nil {
				return err
			}
			for _, off := range offsets[k] {
				n := (min(m.BlockSize, m.SizeBytes-off) + 4095) &^ 4095
				if _, err := f.WriteAt(buf[:n], off); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
}

// alignedTestBuf is n bytes starting on a 4096-byte boundary, as O_DIRECT needs.
func alignedTestBuf(n int64) []byte {
	p := make([]byte, n+4096)
	off := (4096 - int(uintptr(unsafe.Pointer(&p[0]))%4096)) % 4096
	return p[off : off+int(n) : off+int(n)]
}
