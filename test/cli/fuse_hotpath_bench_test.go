package cli

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/internal/testutil"
)

// hotImage is the size of BenchmarkFUSEHotPath's ext4 image (bytes) and
// hotFill the random file in it: data blocks to read back, not zeros.
const (
	hotImage = 256 << 20
	hotFill  = 200 << 20
	// hotRounds is how many times each case is measured (1 s or more each).
	hotRounds = 3
)

// BenchmarkFUSEHotPath measures what FUSE costs on the hot path (issue
// 27's closing note): the read throughput of a fully cached image (every
// block already fetched into the lazy cache file) through the stack
// "backup mount" builds, its loop device over the lazy FUSE file, against
// the same image on a plain loop device over a file in the page cache.
// Reads go to the loop device with O_DIRECT (its own page cache out of
// the way), one at a time: sequential 1 MiB reads, and 4 KiB reads at
// random 4 KiB-aligned offsets. The FUSE stack is measured twice: with
// the kernel's page cache of the FUSE file dropped before each pass (a
// read crosses FUSE into the server, which reads its cache file, unless
// the kernel's readahead of an earlier one brought its page) and warm
// (every page kept). Each case runs hotRounds times, interleaved; it
// prints every round, the medians in MB/s (10^6 bytes/s) and their ratios
// to the plain loop. Run (root, /dev/fuse, make deps):
//
//	go test -run XXX -bench FUSEHotPath -benchtime 1x ./test/cli/
func BenchmarkFUSEHotPath(b *testing.B) {
	testutil.RequireFUSE(b)
	e := newRestoreEnvOf(b, func(t testing.TB, dir string) string {
		return makeFSImage(t, dir, "ext4", hotImage, func(t testing.TB, src string) { writeRandom(t, filepath.Join(src, "big"), 0, hotFill) })
	})
	m := e.startMount(b, "s3:lab/x@latest")
	got := regexp.MustCompile(`device (/dev/loop\d+), image (\S+)/image\)`).FindStringSubmatch(m.stderr.String())
	if got == nil {
		b.Fatalf("no device and image printed: %s", m.stderr.String())
	}
	fuseDev, fuseImg := got[1], got[2]+"/image"
	// Fetch every block: a whole read of the FUSE file, which must equal
	// the source.
	start := time.Now()
	if sum := sha(b, fuseImg); sum != e.sum {
		b.Fatalf("the image read through FUSE: sha256 %s, want %s", sum, e.sum)
	}
	b.Logf("every block fetched in %v", time.Since(start))
	plainDev := testutil.Run(b, "losetup", "--find", "--show", "--read-only", e.img)
	defer func() { testutil.Run(b, "losetup", "--detach", plainDev) }()
	_ = sha(b, e.img) // the plain file in the page cache
	drop := func() { dropCache(b, fuseImg) }

	b.ResetTimer()
	for range b.N {
		// Rounds of every case in turn, and each case's median: the
		// machine is shared, and a burst of load would land on one case.
		var r [6][]float64 // plain seq, plain rand, FUSE seq, FUSE rand, warm seq, warm rand
		for round := range hotRounds {
			r[0] = append(r[0], seqMBps(b, plainDev, nil))
			r[1] = append(r[1], randMBps(b, plainDev, nil))
			r[2] = append(r[2], seqMBps(b, fuseDev, drop))
			r[3] = append(r[3], randMBps(b, fuseDev, drop))
			seqMBps(b, fuseDev, nil) // the FUSE file's page cache filled
			r[4] = append(r[4], seqMBps(b, fuseDev, nil))
			r[5] = append(r[5], randMBps(b, fuseDev, nil))
			load, _ := os.ReadFile("/proc/loadavg")
			b.Logf("round %d (MB/s): seq plain %.0f FUSE %.0f warm %.0f; rand 4 KiB plain %.1f FUSE %.1f warm %.1f; loadavg %s",
				round+1, r[0][round], r[2][round], r[4][round], r[1][round], r[3][round], r[5][round], strings.TrimSpace(string(load)))
		}
		var m [6]float64
		for i := range r {
			m[i] = median(r[i])
		}
		b.Logf("sequential 1 MiB (median): plain loop %.0f MB/s, loop over FUSE %.0f MB/s (%.2f×), FUSE file's page cache warm %.0f MB/s (%.2f×)",
			m[0], m[2], m[2]/m[0], m[4], m[4]/m[0])
		b.Logf("random 4 KiB (median): plain loop %.1f MB/s, loop over FUSE %.1f MB/s (%.2f×), FUSE file's page cache warm %.1f MB/s (%.2f×)",
			m[1], m[3], m[3]/m[1], m[5], m[5]/m[1])
		b.ReportMetric(m[0], "plain-seq-MB/s")
		b.ReportMetric(m[2], "fuse-seq-MB/s")
		b.ReportMetric(m[2]/m[0], "seq-ratio")
		b.ReportMetric(m[1], "plain-rand4k-MB/s")
		b.ReportMetric(m[3], "fuse-rand4k-MB/s")
		b.ReportMetric(m[3]/m[1], "rand4k-ratio")
	}
	b.StopTimer()

	if err := m.cmd.Process.Signal(syscall.SIGINT); err != nil {
		b.Fatal(err)
	}
	if res := m.wait(b); res.FetchedBlocks != res.DataBlocks || res.Blocks != hotImage/blockSize {
		b.Errorf("result %+v: want every one of %d blocks' data blocks fetched once", res, hotImage/blockSize)
	}
}

// seqMBps reads dev from its start to hotImage in 1 MiB O_DIRECT reads,
// pass after pass for at least a second, calling before (if not nil)
// ahead of each pass, and returns the throughput in MB/s.
func seqMBps(b *testing.B, dev string, before func()) float64 {
	f, buf := openDirect(b, dev, 1<<20)
	defer f.Close()
	var took time.Duration
	var n int64
	for took < time.Second {
		if before != nil {
			before()
		}
		start := time.Now()
		for off := int64(0); off < hotImage; off += int64(len(buf)) {
			if _, err := f.ReadAt(buf, off); err != nil {
				b.Fatalf("read %s at %d: %v", dev, off, err)
			}
		}
		took += time.Since(start)
		n += hotImage
	}
	return float64(n) / 1e6 / took.Seconds()
}

// randMBps reads 4 KiB at random 4 KiB-aligned offsets of dev's first
// hotImage bytes with O_DIRECT for 1 s (before, if not nil, called first;
// the same offsets on every device) and returns the throughput in MB/s.
func randMBps(b *testing.B, dev string, before func()) float64 {
	f, buf := openDirect(b, dev, 4096)
	defer f.Close()
	if before != nil {
		before()
	}
	rng := rand.New(rand.NewPCG(27, 4096))
	var n int64
	start := time.Now()
	for time.Since(start) < time.Second {
		for range 256 {
			off := rng.Int64N(hotImage/4096) * 4096
			if _, err := f.ReadAt(buf, off); err != nil {
				b.Fatalf("read %s at %d: %v", dev, off, err)
			}
			n += 4096
		}
	}
	return float64(n) / 1e6 / time.Since(start).Seconds()
}

// openDirect opens dev for O_DIRECT reads and returns it with a
// page-aligned buffer of size bytes (O_DIRECT's alignment).
func openDirect(b *testing.B, dev string, size int) (*os.File, []byte) {
	f, err := os.OpenFile(dev, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		b.Fatal(err)
	}
	buf, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = unix.Munmap(buf) })
	return f, buf
}

// median returns the middle of v (sorted in place).
func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

// dropCache evicts path's pages from the kernel's page cache.
func dropCache(b *testing.B, path string) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		b.Fatal(err)
	}
}
