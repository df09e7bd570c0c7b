package driver

import (
	"slices"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

// The ranges the SnapshotMetadata service answers (snapshot_metadata.go),
// computed from what the pool and the manifests already know, without
// reading a byte of data: FIEMAP extents of local snapshots, block digests
// of backup images.

// span is the byte range [off, off+n) of a snapshot's volume.
type span struct{ off, n int64 }

func (s span) end() int64 { return s.off + s.n }

// appendMerged appends s to out, merged with the last span when they
// touch (VARIABLE_LENGTH ranges: fewer, longer tuples).
func appendMerged(out []span, s span) []span {
	if k := len(out) - 1; k >= 0 && out[k].end() == s.off {
		out[k].n += s.n
		return out
	}
	return append(out, s)
}

// extentsAllocated are the ranges of [0, size) that extents hold data in:
// holes and unwritten extents (both read as zeros) left out.
func extentsAllocated(exts []backend.Extent, size int64) []span {
	var out []span
	for _, p := range pieces(exts, size) {
		out = appendMerged(out, span{p.lo, p.hi - p.lo})
	}
	return out
}

// piece is a part of a file's [0, size) that holds data: an extent,
// clipped, that is not unwritten; phys is the device byte of lo.
type piece struct {
	lo, hi, phys int64
	uncertain    bool
}

// pieces returns the data pieces of exts within [0, size), in order.
func pieces(exts []backend.Extent, size int64) []piece {
	var out []piece
	for _, e := range exts {
		lo, hi := max(e.Logical, 0), min(e.Logical+e.Length, size)
		if e.Unwritten || lo >= hi {
			continue
		}
		out = append(out, piece{lo: lo, hi: hi, phys: e.Physical + (lo - e.Logical), uncertain: e.Uncertain})
	}
	return out
}

// extentsDelta are the ranges of [0, size) where two files of one
// reflink pool may differ: where one holds data and the other reads zeros,
// or both hold data on different device bytes (a write to a shared extent
// is copied elsewhere first: docs/snapshot-metadata.md), or either extent
// is uncertain. Ranges where both map the same device bytes, or both read
// zeros, are the same without reading them.
func extentsDelta(base, target []backend.Extent, size int64) []span {
	a, b := pieces(base, size), pieces(target, size)
	cuts := []int64{0, size}
	for _, p := range append(slices.Clone(a), b...) {
		cuts = append(cuts, p.lo, p.hi)
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	var out []span
	i, j := 0, 0
	for k := 0; k+1 < len(cuts); k++ {
		lo, hi := cuts[k], cuts[k+1]
		pa, pb := pieceAt(a, &i, lo), pieceAt(b, &j, lo)
		if differ(pa, pb, lo) {
			out = appendMerged(out, span{lo, hi - lo})
		}
	}
	return out
}

// pieceAt returns the piece of ps covering byte at (nil for zeros),
// advancing *i past the pieces that end before it; at never decreases.
func pieceAt(ps []piece, i *int, at int64) *piece {
	for *i < len(ps) && ps[*i].hi <= at {
		*i++
	}
	if *i < len(ps) && ps[*i].lo <= at {
		return &ps[*i]
	}
	return nil
}

// differ reports whether the bytes from at of two pieces (nil: zeros) may
// differ.
func differ(a, b *piece, at int64) bool {
	switch {
	case a == nil || b == nil:
		return a != b
	case a.uncertain || b.uncertain:
		return true
	}
	return a.phys+(at-a.lo) != b.phys+(at-b.lo)
}

// imageBlock is the range of block i of an image: BlockSize bytes, the
// last one short when the size is not a multiple of it.
func imageBlock(im *s3chain.Image, i int64) span {
	off := i * im.BlockSize
	return span{off, min(im.BlockSize, im.SizeBytes-off)}
}

// imageAllocated are the image's non-zero blocks, one range each.
func imageAllocated(im *s3chain.Image) []span {
	out := make([]span, 0, len(im.Blocks))
	for _, b := range im.Blocks {
		if b.Digest != "" && b.Index*im.BlockSize < im.SizeBytes {
			out = append(out, imageBlock(im, b.Index))
		}
	}
	return out
}

// imagesDelta are the blocks of target whose digest differs from base's at
// the same index (a block absent from a list is zero), one range each:
// both images of one chain, block digests keyed alike. Blocks beyond
// base's size are compared with zeros. Both block lists are sorted by
// index (s3chain.Image).
func imagesDelta(base, target *s3chain.Image) []span {
	n := (target.SizeBytes + target.BlockSize - 1) / target.BlockSize
	var out []span
	a, b := base.Blocks, target.Blocks
	for len(a) > 0 || len(b) > 0 {
		var idx int64
		var da, db string
		switch {
		case len(b) == 0 || len(a) > 0 && a[0].Index < b[0].Index:
			idx, da, a = a[0].Index, a[0].Digest, a[1:]
		case len(a) == 0 || b[0].Index < a[0].Index:
			idx, db, b = b[0].Index, b[0].Digest, b[1:]
		default:
			idx, da, db, a, b = a[0].Index, a[0].Digest, b[0].Digest, a[1:], b[1:]
		}
		if idx >= n {
			break
		}
		if da != db {
			out = append(out, imageBlock(target, idx))
		}
	}
	return out
}

// fromOffset drops the ranges that end at or before start (CSI spec
// "GetMetadataAllocated": no tuple may end before starting_offset) and,
// when clip (VARIABLE_LENGTH), starts the first at start; FIXED_LENGTH
// keeps whole blocks, the first the one holding start.
func fromOffset(spans []span, start int64, clip bool) []span {
	i, _ := slices.BinarySearchFunc(spans, start, func(s span, at int64) int {
		if s.end() <= at {
			return -1
		}
		return 1
	})
	spans = spans[i:]
	if clip && len(spans) > 0 && spans[0].off < start {
		spans = slices.Clone(spans)
		spans[0] = span{start, spans[0].end() - start}
	}
	return spans
}
