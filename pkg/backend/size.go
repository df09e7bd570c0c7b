package backend

import (
	"context"
	"fmt"
	"math"
)

// blockSize is the granularity of lvol sizes in bytes: the page size and the
// usual filesystem block, so a data file never ends in a partial block.
const blockSize = 4096

// roundSize rounds a requested size in bytes up to a multiple of blockSize.
// Errors: ErrInvalid for a negative size or one that would overflow.
func roundSize(n int64) (int64, error) {
	if n < 0 || n > math.MaxInt64-blockSize {
		return 0, fmt.Errorf("size %d bytes: %w", n, ErrInvalid)
	}
	return (n + blockSize - 1) / blockSize * blockSize, nil
}

// checkFits applies the pool's thin-provisioning admission rule: one lvol's
// logical size may not exceed the total size of the filesystem holding the
// pool (it could never be filled), but the sum of logical sizes may exceed
// the free space (that is what thin provisioning is for; running out of
// blocks later surfaces as ENOSPC on write). Errors: ErrNoSpace.
func (p *FilePool) checkFits(ctx context.Context, size int64) error {
	c, err := p.Capacity(ctx)
	if err != nil {
		return err
	}
	if size > c.TotalBytes {
		return fmt.Errorf("lvol of %d bytes is larger than the pool's filesystem (%d bytes): %w",
			size, c.TotalBytes, ErrNoSpace)
	}
	return nil
}
