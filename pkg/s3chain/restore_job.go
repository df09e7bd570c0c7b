package s3chain

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// restoreJob is the state of one running restore.
type restoreJob struct {
	r      *Repo
	o      *RestoreOptions
	cfg    *chainConfig
	tip    *Manifest
	blocks []digest // the resolved volume image
	target *os.File
	isDev  bool
	cp     *checkpointer

	fetched, skipped, zero atomic.Int64
	fetchedBytes, written  atomic.Int64
	done                   atomic.Int64
}

// fetch is one block object to download and the block indices it fills.
type fetch struct {
	d       digest
	indices []int64
}

func (j *restoreJob) blockLen(i int64) int64 { return j.tip.blockLen(i) }

func (j *restoreJob) report() {
	if j.o.Progress != nil {
		j.o.Progress(Progress{DoneBytes: j.done.Load(), TotalBytes: j.tip.SizeBytes})
	}
}

func (j *restoreJob) stats(d time.Duration) RestoreStats {
	return RestoreStats{FetchedBlocks: int(j.fetched.Load()), SkippedBlocks: int(j.skipped.Load()),
		ZeroBlocks: int(j.zero.Load()), FetchedBytes: j.fetchedBytes.Load(), WrittenBytes: j.written.Load(), Duration: d}
}

// run zeroes the zero ranges, then fetches and writes the data blocks.
func (j *restoreJob) run(ctx context.Context) error {
	if err := j.zeroRanges(ctx); err != nil {
		return err
	}
	return j.fetchAll(ctx, j.plan())
}

// zeroRanges makes every run of zero blocks read as zeros. It is cheap and
// idempotent (holes are detected), so it is not checkpointed.
func (j *restoreJob) zeroRanges(ctx context.Context) error {
	n := int64(len(j.blocks))
	for i := int64(0); i < n; {
		if !j.blocks[i].isZero() {
			i++
			continue
		}
		k := i
		for k < n && j.blocks[k].isZero() {
			k++
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		off, end := i*j.tip.BlockSize, (k-1)*j.tip.BlockSize+j.blockLen(k-1)
		w, err := zeroRange(j.target, j.isDev, off, end)
		if err != nil {
			return err
		}
		j.written.Add(w)
		j.zero.Add(k - i)
		j.done.Add(end - off)
		i = k
	}
	j.report()
	return nil
}

// plan groups the data blocks not yet done by object, in order of first
// use, so each object is fetched once even when several blocks share it.
func (j *restoreJob) plan() []*fetch {
	var out []*fetch
	byDigest := map[digest]*fetch{}
	for i, d := range j.blocks {
		switch {
		case d.isZero():
		case j.cp.isDone(int64(i)):
			j.skipped.Add(1)
			j.done.Add(j.blockLen(int64(i)))
		case byDigest[d] != nil:
			byDigest[d].indices = append(byDigest[d].indices, int64(i))
		default:
			f := &fetch{d: d, indices: []int64{int64(i)}}
			byDigest[d] = f
			out = append(out, f)
		}
	}
	return out
}

func (j *restoreJob) fetchAll(ctx context.Context, todo []*fetch) error {
	workers := j.o.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	g, ctx := errgroup.WithContext(ctx)
	next := make(chan *fetch)
	g.Go(func() error {
		defer close(next)
		for _, f := range todo {
			select {
			case next <- f:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	for range workers {
		g.Go(func() error {
			buf := make([]byte, j.tip.BlockSize)
			for f := range next {
				if err := j.fetchOne(ctx, f, buf); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// fetchOne downloads one object, checks it and writes it at every offset
// that uses it.
func (j *restoreJob) fetchOne(ctx context.Context, f *fetch, buf []byte) error {
	first := f.indices[0]
	key := blockKey(j.cfg.Chain, f.d.String())
	obj, err := j.r.store.Get(ctx, key)
	if errors.Is(err, ErrObjectNotFound) {
		return fmt.Errorf("%w: block %d (object %s) is missing: %w", ErrCorruptBlock, first, key, err)
	}
	if err != nil {
		return fmt.Errorf("fetch block %d (object %s): %w", first, key, err)
	}
	j.fetched.Add(1)
	j.fetchedBytes.Add(int64(len(obj)))
	data, err := j.r.checkBlock(j.cfg, obj, f.d, j.blockLen(first), buf)
	if err != nil {
		return fmt.Errorf("%w: block %d (object %s): %v", ErrCorruptBlock, first, key, err)
	}
	for _, i := range f.indices {
		if _, err := j.target.WriteAt(data[:j.blockLen(i)], i*j.tip.BlockSize); err != nil {
			return fmt.Errorf("write block %d to %s: %w", i, j.o.Target, err)
		}
		j.written.Add(j.blockLen(i))
		j.done.Add(j.blockLen(i))
		j.cp.markWritten(i)
	}
	j.report()
	return nil
}

// checkBlock decodes a block object into buf and verifies its length and
// keyed digest.
func (r *Repo) checkBlock(cfg *chainConfig, obj []byte, d digest, want int64, buf []byte) ([]byte, error) {
	data, err := r.decodeBlock(obj, d, want, buf)
	if err != nil {
		return nil, err
	}
	if got := blockDigest(cfg.key, data); got != d {
		return nil, fmt.Errorf("content digest %s does not match", got)
	}
	return data, nil
}
