package lazy_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/internal/testutil"
)

// BenchmarkBrowse measures (issue 27's closing note; run with
// go test -run XXX -bench Browse -benchtime 1x ./pkg/lazy/): the time to
// mount an XFS backup of 1 GiB and of 4 GiB (manifest read, FUSE, loop,
// mount), the blocks fetched to list the root and read one 1 MiB file, and
// the read throughput of the fully fetched image through FUSE (kernel page
// cache of the FUSE file dropped, so every read crosses FUSE; the cache
// file warm) against a plain file in the page cache.
func BenchmarkBrowse(b *testing.B) { bySize(b, measureBrowse) }

// bySize runs measure once per b.N for a backup of 1 GiB and of 4 GiB.
func bySize(b *testing.B, measure func(*testing.B, int64)) {
	for _, size := range []int64{1 << 30, 4 << 30} {
		b.Run(fmt.Sprintf("%dGiB", size>>30), func(b *testing.B) {
			for range b.N {
				measure(b, size)
			}
		})
	}
}

func measureBrowse(b *testing.B, size int64) {
	fill := 0
	if size <= 1<<30 {
		fill = 512 << 20 // data to read back: the throughput is measured on this image only
	}
	t0 := time.Now()
	bk := newBackupSized(b, "xfs", size, fill)
	b.Logf("%d GiB: image made and backed up in %v", size>>30, time.Since(t0))
	start := time.Now()
	im, bw := bk.browse(b, 10*time.Second)
	mount := time.Since(start)
	atMount := im.Stats().FetchedBlocks
	if _, err := os.ReadDir(bw.Dir); err != nil {
		b.Fatal(err)
	}
	listed := im.Stats().FetchedBlocks
	t1 := time.Now()
	if got := fileSHA(b, filepath.Join(bw.Dir, "one-mib")); got != bk.sums["one-mib"] {
		b.Fatal("one-mib: wrong sha256")
	}
	readFile := time.Since(t1)
	read := im.Stats().FetchedBlocks
	b.Logf("%d GiB: mount %v (%d blocks fetched), list root: %d blocks in all, read 1 MiB file: %v, %d blocks in all, of %d data blocks (%d blocks)",
		size>>30, mount, atMount, listed, readFile, read, im.Stats().DataBlocks, im.Stats().Blocks)
	b.ReportMetric(mount.Seconds(), "mount-s")
	b.ReportMetric(float64(read), "blocks-fetched")

	if fill == 0 {
		return
	}
	fetchAll := time.Now()
	copyAll(b, bw.Image, false)
	b.Logf("%d GiB: first full read (fetching %d blocks): %v", size>>30, im.Stats().FetchedBlocks, time.Since(fetchAll))
	plain := filepath.Join(bk.dir, "plain.img")
	copyFile(b, bw.Image, plain)
	copyAll(b, plain, false) // warm
	tp := copyAll(b, plain, false)
	tf := copyAll(b, bw.Image, true)
	tfw := copyAll(b, bw.Image, false)
	mib := float64(size) / (1 << 20)
	b.Logf("%d GiB: read throughput: plain file (page cache) %.0f MiB/s, FUSE fully fetched %.0f MiB/s (kernel cache dropped), FUSE warm %.0f MiB/s",
		size>>30, mib/tp.Seconds(), mib/tf.Seconds(), mib/tfw.Seconds())
	b.ReportMetric(mib/tf.Seconds(), "fuse-MiB/s")
	b.ReportMetric(mib/tp.Seconds(), "plain-MiB/s")
	_ = os.Remove(plain)
}

// copyAll reads path to the end in 1 MiB reads and returns the time;
// drop first evicts its pages from the kernel's page cache.
func copyAll(b *testing.B, path string, drop bool) time.Duration {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if drop {
		_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	}
	start := time.Now()
	buf := make([]byte, 1<<20)
	for {
		_, err := f.Read(buf)
		if err == io.EOF {
			return time.Since(start)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

func copyFile(b *testing.B, from, to string) {
	src, err := os.Open(from)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		b.Fatal(err)
	}
	defer dst.Close()
	if _, err := io.Copy(dst, src); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkInstant measures an instant restore (issue 27; go test -run
// XXX -bench Instant -benchtime 1x ./pkg/lazy/): for an XFS backup of 1
// GiB and of 4 GiB, the time from opening the backup to its filesystem
// mounted read-write over the FUSE file (what NodeStage of an instant
// volume will do), the full hydration's time, and for the 1 GiB one the
// read throughput of the hydrated image through FUSE (its page cache
// dropped) against the data file itself (a plain loop device's backing
// file, page cache dropped too).
func BenchmarkInstant(b *testing.B) { bySize(b, measureInstant) }

func measureInstant(b *testing.B, size int64) {
	fill := 0
	if size <= 1<<30 {
		fill = 512 << 20
	}
	bk := newBackupSized(b, "xfs", size, fill)
	start := time.Now()
	in := stageInstant(b, bk)
	mnt := filepath.Join(bk.dir, "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		b.Fatal(err)
	}
	testutil.Run(b, "mount", "-t", "xfs", in.dev, mnt)
	staged := time.Since(start)
	atMount := in.im.Stats().FetchedBlocks
	t1 := time.Now()
	if got := fileSHA(b, filepath.Join(mnt, "one-mib")); got != bk.sums["one-mib"] {
		b.Fatal("one-mib: wrong sha256")
	}
	readFile := time.Since(t1)
	t2 := time.Now()
	if err := in.im.Hydrate(context.Background(), 4); err != nil {
		b.Fatal(err)
	}
	hydrated := time.Since(t2)
	st := in.im.Stats()
	b.Logf("%d GiB: staged and mounted in %v (%d blocks fetched), 1 MiB file read in %v, hydrated in %v (%d of %d data blocks fetched, %d MiB)",
		size>>30, staged, atMount, readFile, hydrated, st.FetchedBlocks, st.DataBlocks, st.FetchedDataBytes>>20)
	b.ReportMetric(staged.Seconds(), "staged-s")
	b.ReportMetric(hydrated.Seconds(), "hydrated-s")
	testutil.Run(b, "umount", mnt)
	if fill == 0 {
		return
	}
	mib := float64(size) / (1 << 20)
	tf := copyAll(b, in.srv.Path(), true)
	tp := copyAll(b, in.data, true)
	b.Logf("%d GiB: read throughput of the hydrated image: through FUSE %.0f MiB/s, the data file %.0f MiB/s (page caches dropped)",
		size>>30, mib/tf.Seconds(), mib/tp.Seconds())
	b.ReportMetric(mib/tf.Seconds(), "fuse-MiB/s")
	b.ReportMetric(mib/tp.Seconds(), "data-MiB/s")
}
