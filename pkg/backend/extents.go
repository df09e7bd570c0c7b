package backend

import (
	"math"
	"os"

	"github.com/chainvol/chainvol/internal/fiemap"
)

// Extent is one FIEMAP extent of a file: file bytes [Logical,
// Logical+Length) on device bytes starting at Physical.
type Extent struct {
	Logical, Physical, Length int64
	// Unwritten: allocated but reads as zeros (FIEMAP_EXTENT_UNWRITTEN).
	Unwritten bool
	// Uncertain: Physical does not identify the bytes (delalloc, inline,
	// encoded...): two such extents are never known to hold the same data.
	Uncertain bool
	// Shared: the filesystem reports the device bytes held by another file
	// too (FIEMAP_EXTENT_SHARED, a reflink).
	Shared bool
}

// Extents returns the extents of the data file at path, sorted by
// Logical, after flushing delayed allocations (FIEMAP_FLAG_SYNC) so that
// the map is final; holes are the bytes no extent covers. The file is
// read through an open descriptor, so an lvol deleted meanwhile answers
// with the extents it had. Errors: os.ErrNotExist (wrapped) when the file
// is gone, the ioctl's errno (EOPNOTSUPP on a filesystem without FIEMAP).
// Source: Documentation/filesystems/fiemap.rst.
func Extents(path string) ([]Extent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Extent
	err = fiemap.Walk(f, math.MaxInt64, true, func(e fiemap.Extent) {
		out = append(out, Extent{Logical: e.Logical, Physical: e.Physical, Length: e.Length,
			Unwritten: e.Flags&fiemap.Unwritten != 0, Uncertain: e.Flags&fiemap.Uncertain != 0,
			Shared: e.Flags&fiemap.Shared != 0})
	})
	return out, err
}
