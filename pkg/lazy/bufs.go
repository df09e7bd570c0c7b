package lazy

import (
	"sync"

	"github.com/chainvol/chainvol/internal/directio"
)

// fetchBuf is the memory of one block fetch, reused from fetch to fetch
// as the restore engine reuses its restoreBufs (s3chain
// restore_writers.go): a fresh object buffer per block (ReadBlock
// allocates one when given none, zeroed: page faults, GC), a fresh zstd
// decode buffer and a copy of every block into an aligned buffer for its
// O_DIRECT write were what hydration cost over a restore of the same
// backup: 1.24-1.44× its driver CPU before, 1.01-1.08× after (docs/BENCHMARKS.md
// "Instant restore"). obj is where the object lands,
// one byte before an aligned address, so that a raw block after its kind
// byte is aligned and written O_DIRECT from where it landed; dec is
// aligned, where a zstd block decodes, and the copy of a block that is
// not aligned (a sealed raw block, decrypted in place after its nonce;
// an object the store returned in its own memory) before its direct
// write. obj is nil for a Source that does not say its largest object
// (objectSizer): ReadBlock then allocates.
type fetchBuf struct {
	obj, dec []byte
}

// objectSizer is a Source that bounds its block objects in bytes
// (*s3chain.BlockReader's MaxObjectBytes): the size of the object buffer
// ReadBlock needs so that it allocates none.
type objectSizer interface {
	MaxObjectBytes() int64
}

// fetchBufs hands out the fetchBufs of one image; a fetch takes one and
// puts it back once its block is written, so there are about as many as
// fetches run at once (hydration's workers and the readers). The zero
// value is ready.
type fetchBufs struct {
	pool sync.Pool
}

// get returns a free fetchBuf for src's blocks, allocating one if none is
// free.
func (p *fetchBufs) get(src Source) *fetchBuf {
	if b, ok := p.pool.Get().(*fetchBuf); ok {
		return b
	}
	b := &fetchBuf{dec: directio.AlignedBuf(src.BlockSize())}
	if s, ok := src.(objectSizer); ok {
		b.obj = directio.AlignedBuf(s.MaxObjectBytes() + directio.Align)[directio.Align-1:]
	}
	return b
}

// put gives b back: nothing may use its memory after.
func (p *fetchBufs) put(b *fetchBuf) { p.pool.Put(b) }
