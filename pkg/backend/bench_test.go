package backend

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/testutil"
)

// BenchmarkSnapshot measures one snapshot plus one clone of that snapshot
// (two Creates, each with its fsyncs and bbolt commits) of lvols of 1 GiB and
// 10 GiB filled with written data, on a reflink XFS of 24 GiB on a loop
// device; "ext4-copy-1GiB" is the same on ext4 (full sparse copies), for scale.
// Run: go test -run '^$' -bench Snapshot -benchtime 10x ./pkg/backend (root).
func BenchmarkSnapshot(b *testing.B) {
	mnt := testutil.LoopFS(b, "xfs", 24<<30)
	reflink := openPool(b, filepath.Join(mnt, "reflink"))
	if !reflink.Reflink() {
		b.Fatal("no reflink on XFS")
	}
	for _, gib := range []int64{1, 10} {
		src := filledVolume(b, reflink, gib)
		b.Run(fmt.Sprintf("reflink-%dGiB", gib), func(b *testing.B) { benchSnapClone(b, reflink, src) })
	}
	// Not on the XFS: there copy_file_range itself shares extents (remap),
	// so only ext4 shows what a pool without reflink pays.
	copyPool := openPool(b, testutil.LoopFS(b, "ext4", 4<<30))
	if copyPool.Reflink() {
		b.Fatal("reflink on ext4")
	}
	src := filledVolume(b, copyPool, 1)
	b.Run("ext4-copy-1GiB", func(b *testing.B) { benchSnapClone(b, copyPool, src) })
}

func benchSnapClone(b *testing.B, p *FilePool, src LVol) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("%s-%d", src.Name, i)
		s := mustCreate(b, p, CreateOptions{Name: name, Kind: KindSnapshot, SourceID: src.ID})
		mustCreate(b, p, CreateOptions{Name: name, Kind: KindVolume, SourceID: s.ID})
		b.StopTimer()
		for _, k := range []Kind{KindVolume, KindSnapshot} {
			v, _ := p.GetByName(ctx, k, name)
			if err := p.Delete(ctx, v.ID); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
}

// filledVolume creates a volume of gib GiB and writes all of it, 64 MiB of
// random bytes at a time, then fsyncs it.
func filledVolume(b *testing.B, p *FilePool, gib int64) LVol {
	v := mustCreate(b, p, CreateOptions{Name: fmt.Sprintf("full-%dg", gib), Kind: KindVolume, SizeBytes: gib << 30})
	path, _ := p.DataPath(v.ID)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<20)
	_, _ = rand.Read(chunk)
	start := time.Now()
	for off := int64(0); off < v.SizeBytes; off += int64(len(chunk)) {
		if _, err := f.WriteAt(chunk, off); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	b.Logf("filled %d GiB in %v", gib, time.Since(start).Round(time.Millisecond))
	return v
}
