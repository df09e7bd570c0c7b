package driver

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// BenchmarkMetadataDeltaBackups (issue 28): GetMetadataDelta over gRPC of
// two backups of a 64 GiB block volume with 1% of its 2 MiB blocks
// changed between them, asked of a fresh driver that never saw the volume
// (the images come from the target's manifests: no byte of data is read,
// so the time depends on the manifests' block counts, not on the data's
// size). Reports the changed blocks and the time per call.
func BenchmarkMetadataDeltaBackups(b *testing.B) {
	const size = 64 << 30
	e := startMetaEnvOn(b, 80<<30, nil, "")
	vol := e.blockVolume("pvc-big", size)
	rng := rand.New(rand.NewPCG(28, 64))
	blocks := int64(size / (2 << 20))
	touch := func(n int) { // 4 KiB of data in n random 2 MiB blocks
		writeBlocks(b, e, vol, rng, blocks, 2<<20, n)
	}
	touch(int(blocks / 10))
	b1 := e.snapshot("big-1", vol, true)
	touch(int(blocks / 100))
	b2 := e.snapshot("big-2", vol, true)
	f := startMetaEnv(b, []string{"default=file://" + e.stateBackups()}, "")
	var ranges int
	b.ResetTimer()
	for range b.N {
		st, err := f.meta.GetMetadataDelta(context.Background(), &csi.GetMetadataDeltaRequest{BaseSnapshotId: b1, TargetSnapshotId: b2})
		if err != nil {
			b.Fatal(err)
		}
		ranges = drain(b, st.Recv)
	}
	b.ReportMetric(float64(ranges), "changed-blocks")
}

// BenchmarkMetadataAllocatedLocal (issue 28): GetMetadataAllocated over
// gRPC of a local snapshot of a 16 GiB block volume holding 4,096
// separate 4 KiB extents (FIEMAP of its data file).
func BenchmarkMetadataAllocatedLocal(b *testing.B) {
	const size = 16 << 30
	e := startMetaEnvOn(b, 20<<30, nil, "")
	vol := e.blockVolume("pvc-16g", size)
	writeBlocks(b, e, vol, rand.New(rand.NewPCG(28, 16)), size/(4<<20), 4<<20, 4096)
	snap := e.snapshot("s16g", vol, false)
	var ranges int
	b.ResetTimer()
	for range b.N {
		st, err := e.meta.GetMetadataAllocated(context.Background(), &csi.GetMetadataAllocatedRequest{SnapshotId: snap})
		if err != nil {
			b.Fatal(err)
		}
		ranges = drain(b, st.Recv)
	}
	if ranges != 4096 {
		b.Fatalf("%d ranges, want the 4096 extents", ranges)
	}
	b.ReportMetric(float64(ranges), "extents")
}

// writeBlocks writes 4 KiB of random bytes at the start of n distinct
// random slots of slot bytes among slots of lvol id's data file, synced.
func writeBlocks(tb testing.TB, e *metaEnv, id string, rng *rand.Rand, slots, slot int64, n int) {
	tb.Helper()
	path, err := e.pool.DataPath(id)
	if err != nil {
		tb.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for _, i := range rng.Perm(int(slots))[:n] {
		for j := range buf {
			buf[j] = byte(rng.UintN(255) + 1)
		}
		if _, err := f.WriteAt(buf, int64(i)*slot); err != nil {
			tb.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		tb.Fatal(err)
	}
}

// drain reads a stream to its end and counts its tuples.
func drain[T interface{ GetBlockMetadata() []*csi.BlockMetadata }](tb testing.TB, recv func() (T, error)) int {
	n := 0
	for {
		m, err := recv()
		if errors.Is(err, io.EOF) {
			return n
		} else if err != nil {
			tb.Fatal(err)
		}
		n += len(m.GetBlockMetadata())
	}
}
