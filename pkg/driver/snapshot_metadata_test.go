package driver

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// TestSnapshotMetadataLocalBlock (issue 28): over gRPC on Run's socket, the
// allocated ranges of two local snapshots of a sparse block volume cover
// every non-zero 4 KiB block and at most 1.5× the non-zero bytes
// (VARIABLE_LENGTH, from FIEMAP); their delta after random writes covers
// every changed byte and at most 2× them; paging by max_results and a
// starting_offset in the middle resume exactly; a cancelled stream leaves
// no handler running; every error code of the spec's tables; a backup
// whose base the node keeps compares with local snapshots by extents.
func TestSnapshotMetadataLocalBlock(t *testing.T) {
	e := startMetaEnv(t, nil, "")
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 28))
	const size = 256 << 20
	vol := e.blockVolume("pvc-a", size)
	e.scribble(vol, rng, 300)
	s1 := e.snapshot("snap-1", vol, false)
	e.scribble(vol, rng, 200)
	s2 := e.snapshot("snap-2", vol, false)
	img1, img2 := e.data(s1), e.data(s2)

	for _, c := range []struct {
		id  string
		img []byte
	}{{s1, img1}, {s2, img2}} {
		a, err := e.allocated(c.id, 0, 0)
		mustOK(t, err)
		if a.kind != csi.BlockMetadataType_VARIABLE_LENGTH || a.capacity != size {
			t.Fatalf("allocated %s: type %v capacity %d", c.id, a.kind, a.capacity)
		}
		need, got := checkCovers(t, "allocated "+c.id, a.ranges, size, nonZero(c.img))
		if float64(got) > 1.5*float64(need) {
			t.Errorf("allocated %s covers %d bytes for %d non-zero bytes (> 1.5×)", c.id, got, need)
		}
		t.Logf("allocated %s: %d ranges, %d bytes for %d non-zero", c.id, len(a.ranges), got, need)
	}
	d, err := e.delta(s1, s2, 0, 0)
	mustOK(t, err)
	need, got := checkCovers(t, "delta", d.ranges, size, changed(img1, img2))
	if need == 0 || float64(got) > 2*float64(need) {
		t.Errorf("delta covers %d bytes for %d changed bytes (> 2×)", got, need)
	}
	t.Logf("delta: %d ranges, %d bytes for %d changed", len(d.ranges), got, need)
	if same, err := e.delta(s2, s2, 0, 0); err != nil || len(same.ranges) != 0 || same.messages != 1 {
		t.Errorf("delta of a snapshot with itself: %d ranges in %d messages, %v; want one empty message", len(same.ranges), same.messages, err)
	}

	checkPaging(t, d, func(start int64, max int32) (metaStream, error) { return e.delta(s1, s2, start, max) })
	full, _ := e.allocated(s2, 0, 0)
	checkPaging(t, full, func(start int64, max int32) (metaStream, error) { return e.allocated(s2, start, max) })
	checkCancel(t, func(ctx context.Context) (func() error, error) {
		st, err := e.meta.GetMetadataAllocated(ctx, &csi.GetMetadataAllocatedRequest{SnapshotId: s2, MaxResults: 1})
		return func() error { _, err := st.Recv(); return err }, err
	})

	other := e.snapshot("snap-other", e.blockVolume("pvc-b", 64<<20), false)
	wantStreamCode(t, e.allocatedErr(""), codes.InvalidArgument)
	wantStreamCode(t, e.allocatedErr("snap-00000000000000000000"), codes.NotFound)
	wantStreamCode(t, e.allocatedErr("../../etc"), codes.NotFound)
	wantStreamCode(t, e.allocatedErr(vol), codes.NotFound) // a volume is no snapshot
	wantStreamCode(t, e.allocatedErr("backup:default:nochain@b1"), codes.NotFound)
	wantStreamCode(t, e.allocatedAt(s1, -1, 0), codes.OutOfRange)
	wantStreamCode(t, e.allocatedAt(s1, size+1, 0), codes.OutOfRange)
	wantStreamCode(t, e.allocatedAt(s1, 0, -1), codes.InvalidArgument)
	if a, err := e.allocated(s1, size, 0); err != nil || len(a.ranges) != 0 {
		t.Errorf("allocated from the volume's end: %d ranges, %v", len(a.ranges), err)
	}
	_, err = e.delta(s1, "", 0, 0)
	wantStreamCode(t, err, codes.InvalidArgument)
	_, err = e.delta(other, s2, 0, 0)
	wantStreamCode(t, err, codes.InvalidArgument, "volume")
	_, err = e.delta(s1, "snap-00000000000000000000", 0, 0)
	wantStreamCode(t, err, codes.NotFound)
	_, err = e.delta(s1, s2, size+1, 0)
	wantStreamCode(t, err, codes.OutOfRange)
	// A Block snapshot holding no filesystem does not clone with mount
	// access: the node would format over its bytes.
	_, err = e.ctl.CreateVolume(e.ctx, &csi.CreateVolumeRequest{Name: "as-mount", VolumeCapabilities: []*csi.VolumeCapability{mountCap("", snw)},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: s1}}}})
	wantCode(t, err, codes.InvalidArgument, "block access")

	// A backup whose base this node keeps compares with the volume's local
	// snapshots by extents: taken with no write since s2, it holds s2's.
	b := e.snapshot("backup-of-a", vol, true)
	if same, err := e.delta(s2, b, 0, 0); err != nil || len(same.ranges) != 0 {
		t.Errorf("delta from %s to backup %s of the same bytes: %d ranges, %v", s2, b, len(same.ranges), err)
	}
	if mixed, err := e.delta(s1, b, 0, 0); err != nil || !equalRanges(mixed.ranges, d.ranges) {
		t.Errorf("delta from %s to backup %s: %d ranges, %v; want the %d of %s to %s", s1, b, len(mixed.ranges), err, len(d.ranges), s1, s2)
	}
}

func (e *metaEnv) allocatedErr(id string) error { return e.allocatedAt(id, 0, 0) }

func (e *metaEnv) allocatedAt(id string, start int64, max int32) error {
	_, err := e.allocated(id, start, max)
	return err
}

// wantStreamCode is wantCode for the error of a stream.
func wantStreamCode(t *testing.T, err error, want codes.Code, contains ...string) {
	t.Helper()
	wantCode(t, err, want, contains...)
}

// checkPaging: the answer in pages of 1, 3 and 7 tuples is the full one,
// and so is one resumed from the end of a range in the middle (what a
// client resends after an interrupted stream), and one from a byte inside a
// range (VARIABLE_LENGTH: the range is cut at it; FIXED_LENGTH: its whole
// block comes first).
func checkPaging(t *testing.T, full metaStream, call func(start int64, max int32) (metaStream, error)) {
	t.Helper()
	if len(full.ranges) < 4 {
		t.Fatalf("only %d ranges: nothing to page", len(full.ranges))
	}
	for _, per := range []int32{1, 3, 7} {
		got, err := call(0, per)
		mustOK(t, err)
		if !equalRanges(got.ranges, full.ranges) || got.messages != (len(full.ranges)+int(per)-1)/int(per) {
			t.Fatalf("max_results %d: %d ranges in %d messages, the full answer has %d", per, len(got.ranges), got.messages, len(full.ranges))
		}
	}
	mid := full.ranges[len(full.ranges)/2]
	resume := mid.GetByteOffset() + mid.GetSizeBytes()
	got, err := call(resume, 5)
	mustOK(t, err)
	if !equalRanges(got.ranges, full.ranges[len(full.ranges)/2+1:]) {
		t.Fatalf("resumed at %d: %d ranges, want the %d after it", resume, len(got.ranges), len(full.ranges)-len(full.ranges)/2-1)
	}
	inside := mid.GetByteOffset() + mid.GetSizeBytes()/2
	got, err = call(inside, 0)
	mustOK(t, err)
	first := proto.Clone(mid).(*csi.BlockMetadata)
	if full.kind == csi.BlockMetadataType_VARIABLE_LENGTH {
		first = &csi.BlockMetadata{ByteOffset: inside, SizeBytes: mid.GetByteOffset() + mid.GetSizeBytes() - inside}
	}
	if want := append([]*csi.BlockMetadata{first}, full.ranges[len(full.ranges)/2+1:]...); !equalRanges(got.ranges, want) {
		t.Fatalf("from byte %d inside %v: first %v, %d ranges; want first %v, %d", inside, mid, got.ranges[0], len(got.ranges), first, len(want))
	}
}

func equalRanges(a, b []*csi.BlockMetadata) bool {
	return slices.EqualFunc(a, b, func(x, y *csi.BlockMetadata) bool { return proto.Equal(x, y) })
}

// checkCancel opens a stream of one tuple a message, reads one message,
// cancels it, and waits until no goroutine runs a SnapshotMetadata handler.
func checkCancel(t *testing.T, open func(context.Context) (func() error, error)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	recv, err := open(ctx)
	mustOK(t, err)
	mustOK(t, recv())
	cancel()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "(*snapshotMetadata)") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a SnapshotMetadata handler still runs 10 s after its stream was cancelled:\n%s", stacks)
		}
	}
}
