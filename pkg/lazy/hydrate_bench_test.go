package lazy_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/lazy"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// BenchmarkHydrate compares, on one XFS backup of 4 GiB holding 512 MiB of
// random bytes over versitygw (no proxy), a full restore (s3chain.Restore,
// its 8 workers) with the hydration of an instant restore of the same
// backup (lazy.Image.Hydrate, 8 workers as the driver runs it), never
// staged and staged (the filesystem mounted read-write over the FUSE file
// and a loop device): wall time and this process's CPU time (user+system,
// versitygw is another process) of each, and their ratios to the
// restore's (issue 27: hydration within 1.2× a full restore). Each way
// runs under a pprof label (way=restore|bare|staged), so that
// go test -run XXX -bench Hydrate -benchtime 1x -cpuprofile cpu.out
// ./pkg/lazy/ and go tool pprof -tagfocus way=bare split the profile.
func BenchmarkHydrate(b *testing.B) {
	bk := newBackupSized(b, "xfs", 4<<30, 512<<20)
	creds := store.Credentials{AccessKeyID: bk.srv.AccessKey, SecretAccessKey: bk.srv.SecretKey}
	st, err := store.Open(context.Background(), bk.srv.URL("t"), creds)
	if err != nil {
		b.Fatal(err)
	}
	if bk.repo, err = s3chain.NewRepo(st, s3chain.RepoOptions{}); err != nil {
		b.Fatal(err)
	}
	ways := []struct {
		name string
		run  func(*testing.B, *backup)
	}{{"restore", benchRestore}, {"bare", benchHydrateBare}, {"staged", benchHydrateStaged}}
	for range b.N {
		var wall, cpu [3]time.Duration
		for w, way := range ways {
			syscall.Sync()
			c0, t0 := processCPU(), time.Now()
			pprof.Do(context.Background(), pprof.Labels("way", way.name), func(context.Context) { way.run(b, bk) })
			wall[w], cpu[w] = time.Since(t0), processCPU()-c0
		}
		b.Logf("restore %v (CPU %v); hydration never staged %v (CPU %v): %.2f× (CPU %.2f×); staged %v (CPU %v): %.2f× (CPU %.2f×)",
			wall[0], cpu[0], wall[1], cpu[1], ratio(wall[1], wall[0]), ratio(cpu[1], cpu[0]),
			wall[2], cpu[2], ratio(wall[2], wall[0]), ratio(cpu[2], cpu[0]))
		b.ReportMetric(ratio(wall[1], wall[0]), "bare/restore")
		b.ReportMetric(ratio(wall[2], wall[0]), "staged/restore")
		b.ReportMetric(ratio(cpu[1], cpu[0]), "bare-cpu/restore")
		b.ReportMetric(ratio(cpu[2], cpu[0]), "staged-cpu/restore")
	}
}

func ratio(a, b time.Duration) float64 { return a.Seconds() / b.Seconds() }

// processCPU is this process's user+system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchRestore restores bk onto a new sparse file.
func benchRestore(b *testing.B, bk *backup) {
	dst := filepath.Join(bk.dir, "restored.img")
	_ = os.Remove(dst)
	if _, _, err := bk.repo.Restore(context.Background(), s3chain.RestoreOptions{Chain: chain, BackupID: bk.id, Destination: dst}); err != nil {
		b.Fatal(err)
	}
	_ = os.Remove(dst)
}

// benchHydrateBare hydrates a new sparse data file of bk, never served.
func benchHydrateBare(b *testing.B, bk *backup) {
	ctx := context.Background()
	br, err := bk.repo.OpenBlocks(ctx, chain, bk.id)
	if err != nil {
		b.Fatal(err)
	}
	data, rec := filepath.Join(bk.dir, "bare.data"), filepath.Join(bk.dir, "bare-state", "vol.bits")
	_ = os.Remove(data)
	_ = os.Remove(rec)
	if err := os.WriteFile(data, nil, 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.Truncate(data, br.SizeBytes()); err != nil {
		b.Fatal(err)
	}
	im, err := lazy.OpenWritable(br, data, rec, lazy.Options{Permanent: func(err error) bool { return errors.Is(err, s3chain.ErrCorruptBlock) }})
	if err != nil {
		b.Fatal(err)
	}
	if err := im.Hydrate(ctx, s3chain.DefaultWorkers); err != nil {
		b.Fatal(err)
	}
	if err := im.Close(); err != nil {
		b.Fatal(err)
	}
	_ = os.Remove(data)
	_ = os.Remove(rec)
}

// benchHydrateStaged stages bk (FUSE file, loop device), mounts its XFS
// read-write, hydrates it, and tears it all down.
func benchHydrateStaged(b *testing.B, bk *backup) {
	_ = os.Remove(filepath.Join(bk.dir, "lvol.data"))
	_ = os.RemoveAll(filepath.Join(bk.dir, "state"))
	in := stageInstant(b, bk)
	mnt := filepath.Join(bk.dir, "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		b.Fatal(err)
	}
	testutil.Run(b, "mount", "-t", "xfs", in.dev, mnt)
	if err := in.im.Hydrate(context.Background(), s3chain.DefaultWorkers); err != nil {
		b.Fatal(err)
	}
	testutil.Run(b, "umount", mnt)
	in.stop(b)
	_ = os.Remove(in.data)
}
