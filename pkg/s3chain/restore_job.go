package s3chain

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// restoreJob is the state of one running restore.
type restoreJob struct {
	r      *Repo
	o      *RestoreOptions
	cfg    *chainConfig
	tip    *Manifest
	blocks []digest // the resolved volume image
	base   []digest // the image the destination starts with (RestoreOptions.Base), or nil
	// baseBad marks blocks of base that VerifyBase found different on the destination.
	baseBad map[int]bool
	dest    *os.File // the restore destination
	direct  *os.File // dest opened with O_DIRECT (openDirect), or nil
	isDev   bool
	cp      *checkpointer
	// keys holds the object key of digests found only under a variant key.
	keysMu sync.Mutex
	keys   map[digest]string

	fetched, skipped, zero, reused atomic.Int64
	fetchedBytes, written          atomic.Int64
	done                           atomic.Int64
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
		ZeroBlocks: int(j.zero.Load()), BaseBlocks: int(j.reused.Load()), FetchedBytes: j.fetchedBytes.Load(), WrittenBytes: j.written.Load(), Duration: d}
}

// run reads back the blocks a checkpoint claims (verifyDone), checks that
// every object still to fetch exists, and only then zeroes the zero ranges
// and fetches and writes the data blocks.
func (j *restoreJob) run(ctx context.Context) error {
	if _, err := j.verifyDone(ctx); err != nil {
		return err
	}
	todo := j.plan()
	if err := j.checkObjects(ctx, todo); err != nil {
		return err
	}
	if err := j.zeroRanges(ctx); err != nil {
		return err
	}
	return j.fetchAll(ctx, todo)
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
		w, err := zeroRange(j.dest, j.isDev, off, end)
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
		case j.fromBase(i) && !j.baseBad[i]:
			j.reused.Add(1)
			j.done.Add(j.blockLen(int64(i)))
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
