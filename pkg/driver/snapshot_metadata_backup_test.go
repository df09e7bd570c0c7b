package driver

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// TestSnapshotMetadataBackups (issue 28): two backups of one chain on S3
// (versitygw), asked of a fresh driver on another pool that never saw the
// volume: the allocated ranges cover every non-zero 4 KiB block
// (FIXED_LENGTH at the chain's block size, from the manifest); the delta
// covers every byte that changed between the two images; paging and
// resuming are exact; a cancelled stream leaves no handler running; a
// backup of another chain is InvalidArgument, an unknown one NotFound, a
// local snapshot beside a backup FailedPrecondition.
func TestSnapshotMetadataBackups(t *testing.T) {
	targets, creds := s3Opts(t)
	e := startMetaEnv(t, targets, creds)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 28))
	const size = 96 << 20
	vol := e.blockVolume("pvc-a", size)
	e.scribble(vol, rng, 40)
	img1 := e.data(vol)
	b1 := e.snapshot("backup-1", vol, true)
	e.scribble(vol, rng, 15)
	img2 := e.data(vol)
	b2 := e.snapshot("backup-2", vol, true)
	otherVol := e.blockVolume("pvc-b", size)
	e.scribble(otherVol, rng, 3)
	other := e.snapshot("backup-other", otherVol, true)

	f := startMetaEnv(t, targets, creds) // another node: only the target is shared
	a, err := f.allocated(b2, 0, 0)
	mustOK(t, err)
	if a.kind != csi.BlockMetadataType_FIXED_LENGTH || a.capacity != size || a.ranges[0].GetSizeBytes() != 2<<20 {
		t.Fatalf("allocated %s: type %v capacity %d first %v; want FIXED_LENGTH of 2 MiB, %d", b2, a.kind, a.capacity, a.ranges[0], size)
	}
	need, got := checkCovers(t, "allocated", a.ranges, size, nonZero(img2))
	t.Logf("allocated: %d blocks, %d bytes for %d non-zero", len(a.ranges), got, need)
	d, err := f.delta(b1, b2, 0, 0)
	mustOK(t, err)
	need, got = checkCovers(t, "delta", d.ranges, size, changed(img1, img2))
	if need == 0 || d.kind != csi.BlockMetadataType_FIXED_LENGTH {
		t.Fatalf("delta: type %v, %d changed bytes", d.kind, need)
	}
	t.Logf("delta: %d blocks, %d bytes for %d changed", len(d.ranges), got, need)
	// Every reported block changed: digests compare exactly.
	for _, r := range d.ranges {
		if !changed(img1, img2)(r.GetByteOffset(), r.GetByteOffset()+r.GetSizeBytes()) {
			t.Errorf("delta reports block %v, whose bytes are the same in both images", r)
		}
	}
	back, err := f.delta(b2, b1, 0, 0)
	mustOK(t, err)
	if !equalRanges(back.ranges, d.ranges) {
		t.Errorf("delta from %s back to %s: %d blocks, the other way %d", b2, b1, len(back.ranges), len(d.ranges))
	}
	checkPaging(t, a, func(start int64, max int32) (metaStream, error) { return f.allocated(b2, start, max) })
	checkCancel(t, func(ctx context.Context) (func() error, error) {
		st, err := f.meta.GetMetadataAllocated(ctx, &csi.GetMetadataAllocatedRequest{SnapshotId: b2, MaxResults: 1})
		return func() error { _, err := st.Recv(); return err }, err
	})

	_, err = f.delta(other, b2, 0, 0)
	wantStreamCode(t, err, codes.InvalidArgument, "chain")
	_, err = f.delta(b1, b2+"x", 0, 0)
	wantStreamCode(t, err, codes.NotFound)
	wantStreamCode(t, f.allocatedErr("backup:nosuchtarget:chain@b1"), codes.NotFound)
	// A selector names no fixed backup: a delta against @latest would move.
	wantStreamCode(t, f.allocatedErr(b2[:strings.LastIndexByte(b2, '@')+1]+"latest"), codes.NotFound, "no fixed backup")
	wantStreamCode(t, f.allocatedAt(b2, size+1, 0), codes.OutOfRange)
	// f keeps no base of the backups: a local snapshot of f compares
	// with none of them.
	local := f.snapshot("local", f.blockVolume("pvc-f", size), false)
	_, err = f.delta(b1, local, 0, 0)
	wantStreamCode(t, err, codes.FailedPrecondition, "digests")
}
