package s3chain

import (
	"context"
	"fmt"
	"unsafe"

	"golang.org/x/sync/errgroup"
)

// A restore fetches and writes in two pools (issue 29): fetch workers GET,
// decode and check each object, then hand the verified block to a writer
// and go on to the next GET, so the O_DIRECT writes that wait on slow
// storage (the bench's loop device: 33-74 ms a block, docs/BENCHMARKS.md)
// no longer stop the fetches. Memory stays bounded: every block buffer
// comes from one bufPool of 2 × workers buffers (a block plus 4 KiB
// each), the same as the two buffers each worker owned before; a fetch
// holds two of them only while it decodes, then keeps the one its block
// is in until the block is written.

// restoreBuf is one buffer of a restore's pool: a block object lands in
// obj (one byte before an aligned address, so that a raw block after its
// kind byte is aligned), a decoded block in blk (aligned). Both views are
// of the same memory: a buffer holds one or the other.
type restoreBuf struct {
	raw []byte
}

func (b *restoreBuf) obj() []byte { return b.raw[directAlign-1:] }
func (b *restoreBuf) blk() []byte { return b.raw[:len(b.raw)-directAlign] }

// holds reports whether p lies within b's memory.
func (b *restoreBuf) holds(p []byte) bool {
	if len(p) == 0 {
		return false
	}
	start, q := uintptr(unsafe.Pointer(&b.raw[0])), uintptr(unsafe.Pointer(&p[0]))
	return q >= start && q < start+uintptr(len(b.raw))
}

// bufPool hands out at most n restoreBufs, allocated on first use.
type bufPool struct {
	free chan *restoreBuf
	made chan struct{} // one token per buffer allocated
	size int64         // bytes of raw
	seen func(n int)   // test hook: the number allocated, after each allocation
}

func newBufPool(n int, objBytes int64) *bufPool {
	return &bufPool{free: make(chan *restoreBuf, n), made: make(chan struct{}, n), size: objBytes + directAlign}
}

// get returns a free buffer, a new one while fewer than n exist, or waits
// for one to be put back; ctx's error if it ends first.
func (p *bufPool) get(ctx context.Context) (*restoreBuf, error) {
	select {
	case b := <-p.free:
		return b, nil
	default:
	}
	select {
	case b := <-p.free:
		return b, nil
	case p.made <- struct{}{}:
		if p.seen != nil {
			p.seen(len(p.made))
		}
		return &restoreBuf{raw: alignedBuf(p.size)}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// put returns b; it never blocks (the channel holds every buffer made).
func (p *bufPool) put(b *restoreBuf) {
	if b != nil {
		p.free <- b
	}
}

// verified is a checked block on its way to a writer: its bytes (in buf,
// or in memory the store returned), the buffer to put back once written,
// and the block indices it fills.
type verified struct {
	data []byte
	buf  *restoreBuf
	f    *fetch
}

// fetchAll runs workers fetch workers and as many writers over todo. The
// writes' channel holds as many entries as the pool has buffers, so a
// fetch worker never waits to hand a block over, only for a buffer.
func (j *restoreJob) fetchAll(ctx context.Context, todo []*fetch) error {
	n := j.workers()
	pool := newBufPool(2*n, j.cfg.maxBlockObject())
	if j.r.hooks != nil {
		pool.seen = j.r.hooks.buffers
	}
	writes := make(chan verified, 2*n)
	g, ctx := errgroup.WithContext(ctx)
	for range n {
		g.Go(func() error { return j.writer(ctx, pool, writes) })
	}
	g.Go(func() error {
		defer close(writes)
		return eachByWorkers(ctx, n, todo, func() func(context.Context, *fetch) error {
			return func(ctx context.Context, f *fetch) error { return j.fetchOne(ctx, f, pool, writes) }
		})
	})
	return g.Wait()
}

// fetchOne downloads one object into a pool buffer, checks it (decoding
// into a second buffer unless it is a raw block, which is checked where it
// landed) and hands the block to the writers with the one buffer it is in.
func (j *restoreJob) fetchOne(ctx context.Context, f *fetch, pool *bufPool, writes chan<- verified) error {
	ob, err := pool.get(ctx)
	if err != nil {
		return err
	}
	first := f.indices[0]
	var bb *restoreBuf // the decode buffer, taken only when needed
	scratch := func() ([]byte, error) {
		if bb == nil {
			b, err := pool.get(ctx)
			if err != nil {
				return nil, err
			}
			bb = b
		}
		return bb.blk(), nil
	}
	data, _, n, err := j.r.fetchBlock(ctx, j.cfg, first, f.d, j.keyOf(f.d), j.blockLen(first), ob.obj(), scratch)
	if n > 0 {
		j.fetched.Add(1)
		j.fetchedBytes.Add(n)
	}
	if err == nil && !isAligned(data) && len(data)%directAlign == 0 && !(bb != nil && bb.holds(data)) {
		// A sealed raw block is decrypted in place, after its nonce:
		// copied into an aligned buffer so that it is written O_DIRECT.
		var p []byte
		if p, err = scratch(); err == nil {
			data = p[:copy(p, data)]
		}
	}
	if err != nil {
		pool.put(ob)
		pool.put(bb)
		return err
	}
	keep := ob // the buffer data is in, or either when the store returned its own memory
	if bb != nil && bb.holds(data) {
		keep = bb
	}
	if keep != ob {
		pool.put(ob)
	}
	if keep != bb {
		pool.put(bb)
	}
	writes <- verified{data: data, buf: keep, f: f}
	return nil
}

// writer writes the blocks handed to it at every offset that uses them,
// marks them written for the checkpoint (done at its next flush, FORMAT.md
// §8) and puts their buffers back. After an error, or once ctx ends, it
// only puts buffers back: nothing is marked that was not written.
func (j *restoreJob) writer(ctx context.Context, pool *bufPool, writes <-chan verified) error {
	var first error
	for v := range writes {
		if first == nil && ctx.Err() == nil {
			first = j.writeVerified(v)
		}
		pool.put(v.buf)
	}
	return first
}

// writeVerified writes one verified block at each of its indices.
func (j *restoreJob) writeVerified(v verified) error {
	for _, i := range v.f.indices {
		n := j.blockLen(i)
		if h := j.r.hooks; h != nil && h.write != nil {
			if err := h.write(i); err != nil {
				return fmt.Errorf("write block %d to %s: %w", i, j.o.Destination, err)
			}
		}
		if err := j.writeBlock(v.data[:n], i*j.tip.BlockSize, v.buf.blk()); err != nil {
			return fmt.Errorf("write block %d to %s: %w", i, j.o.Destination, err)
		}
		if h := j.r.hooks; h != nil && h.written != nil {
			h.written(i)
		}
		j.written.Add(n)
		j.done.Add(n)
		j.cp.markWritten(i)
	}
	j.report()
	return nil
}
