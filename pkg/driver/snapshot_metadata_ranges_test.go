package driver

import (
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

// TestExtentsDelta: ranges where one file reads zeros (hole or unwritten)
// and the other holds data, or both hold data on other device bytes, or
// either is uncertain, are changed; the same device bytes, or zeros on
// both sides, are not; adjacent changes merge; all within size.
func TestExtentsDelta(t *testing.T) {
	k := int64(4096)
	base := []backend.Extent{
		{Logical: 0, Physical: 100 * k, Length: 4 * k},                  // shared with target
		{Logical: 4 * k, Physical: 200 * k, Length: 2 * k},              // rewritten in target
		{Logical: 8 * k, Physical: 300 * k, Length: k, Unwritten: true}, // zeros, target has a hole
		{Logical: 10 * k, Physical: 400 * k, Length: k},                 // punched in target
		{Logical: 12 * k, Physical: 500 * k, Length: k, Uncertain: true},
	}
	target := []backend.Extent{
		{Logical: 0, Physical: 100 * k, Length: 4 * k},
		{Logical: 4 * k, Physical: 900 * k, Length: 2 * k},
		{Logical: 6 * k, Physical: 950 * k, Length: k}, // new data after the rewrite: merges with it
		{Logical: 12 * k, Physical: 500 * k, Length: k, Uncertain: true},
		{Logical: 15 * k, Physical: 990 * k, Length: 4 * k}, // crosses size
	}
	got := extentsDelta(base, target, 16*k)
	want := []span{{4 * k, 3 * k}, {10 * k, k}, {12 * k, k}, {15 * k, k}}
	if !slices.Equal(got, want) {
		t.Fatalf("extentsDelta = %v, want %v", got, want)
	}
	if got := extentsAllocated(base, 16*k); !slices.Equal(got, []span{{0, 6 * k}, {10 * k, k}, {12 * k, k}}) {
		t.Errorf("extentsAllocated = %v", got)
	}
}

// TestImagesDelta: blocks whose digests differ or that one image lacks;
// blocks of the base beyond the target's size are not reported; a size
// that is not a multiple of the block size makes the last block short and
// the stream VARIABLE_LENGTH.
func TestImagesDelta(t *testing.T) {
	bs := int64(1 << 20)
	base := &s3chain.Image{SizeBytes: 8 * bs, BlockSize: bs, Blocks: []s3chain.BlockRef{{Index: 0, Digest: "a"}, {Index: 2, Digest: "b"}, {Index: 3, Digest: "c"}, {Index: 7, Digest: "d"}}}
	target := &s3chain.Image{SizeBytes: 5*bs + 4096, BlockSize: bs, Blocks: []s3chain.BlockRef{{Index: 0, Digest: "a"}, {Index: 1, Digest: "x"}, {Index: 3, Digest: "y"}, {Index: 5, Digest: "z"}}}
	got := imagesDelta(base, target)
	want := []span{{bs, bs}, {2 * bs, bs}, {3 * bs, bs}, {5 * bs, 4096}}
	if !slices.Equal(got, want) {
		t.Fatalf("imagesDelta = %v, want %v", got, want)
	}
	if a := imageAnswer(got, target, 0); a.kind != csi.BlockMetadataType_VARIABLE_LENGTH {
		t.Errorf("unaligned size: %v, want VARIABLE_LENGTH", a.kind)
	}
	if a := imageAnswer(imageAllocated(base), base, 2*bs+1); a.kind != csi.BlockMetadataType_FIXED_LENGTH || !slices.Equal(a.spans, []span{{2 * bs, bs}, {3 * bs, bs}, {7 * bs, bs}}) {
		t.Errorf("allocated from inside block 2: %v %v, want FIXED_LENGTH from the whole block 2", a.kind, a.spans)
	}
}

// TestFromOffset: no range that ends at or before the offset; a
// VARIABLE_LENGTH range holding it is cut there.
func TestFromOffset(t *testing.T) {
	s := []span{{0, 10}, {20, 10}, {40, 10}}
	for _, c := range []struct {
		start int64
		clip  bool
		want  []span
	}{
		{0, true, s}, {10, true, s[1:]}, {25, true, []span{{25, 5}, {40, 10}}}, {25, false, s[1:]}, {50, true, []span{}}, {60, false, []span{}},
	} {
		if got := fromOffset(s, c.start, c.clip); !slices.Equal(got, c.want) {
			t.Errorf("fromOffset(%d, %v) = %v, want %v", c.start, c.clip, got, c.want)
		}
	}
	if s[1] != (span{20, 10}) {
		t.Error("fromOffset changed its input")
	}
}
