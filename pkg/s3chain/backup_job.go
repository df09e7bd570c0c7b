package s3chain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// backupJob is the state of one running backup.
type backupJob struct {
	r       *Repo
	o       *BackupOptions
	cfg     *chainConfig
	lease   *lease // the writer lease the backup runs under
	id      string
	src     *os.File
	base    *os.File // nil: no FIEMAP comparison
	size    int64    // volume bytes
	bs      int64    // block bytes
	workers int

	parent    *Manifest
	parentMap []digest // the parent's volume image; nil for a full backup
	prev      []digest // parentMap fitted to this volume's blocks
	cur       []digest // this volume image, filled in by plan and workers

	mu    sync.Mutex
	known map[digest]bool // objects stored (or being stored) in the chain

	// ret is the retention of the objects the backup keeps (zero: none);
	// written holds the keys it stored with ret, under mu.
	ret     store.Retention
	written map[string]bool

	scanned, uploaded, stored, done atomic.Int64
	zero, dedup                     atomic.Int64
}

func (j *backupJob) close() {
	if j.src != nil {
		j.src.Close()
	}
	j.closeBase()
}

// closeBase drops the FIEMAP base: without its parent's image it says nothing.
func (j *backupJob) closeBase() {
	if j.base != nil {
		j.base.Close()
		j.base = nil
	}
}

func (j *backupJob) blockLen(i int64) int64 { return min(j.bs, j.size-i*j.bs) }

// plan fills prev and cur and returns the blocks that must be read. A block
// is settled without reading when it is a hole in the source (zero) or,
// with a base snapshot, when its extents are the base's (unchanged).
func (j *backupJob) plan() ([]int64, error) {
	n := (j.size + j.bs - 1) / j.bs
	j.prev = make([]digest, n)
	copy(j.prev, j.parentMap)
	j.cur = make([]digest, n)
	// Blocks wholly inside the parent's volume can be unchanged; its partial
	// last block cannot when the size changed (its length differs).
	stable := int64(0)
	var srcExt, baseExt []extent
	if j.base != nil {
		var errA, errB error
		srcExt, errA = fiemapOf(j.src, j.size)
		baseExt, errB = fiemapOf(j.base, j.size)
		if errA == nil && errB == nil {
			stable = j.parent.SizeBytes / j.bs
			if j.parent.SizeBytes == j.size {
				stable = n
			}
		}
	}
	spans := dataSpans(j.src, j.size)
	var toRead []int64
	for i, s := int64(0), 0; i < n; i++ {
		off, end := i*j.bs, i*j.bs+j.blockLen(i)
		if i < stable && sameExtents(srcExt, baseExt, off, end) {
			j.cur[i] = j.prev[i]
			j.done.Add(end - off)
			continue
		}
		for s < len(spans) && spans[s].End <= off {
			s++
		}
		if s == len(spans) || spans[s].Off >= end {
			j.zero.Add(1) // a hole: cur[i] stays zero
			j.done.Add(end - off)
			continue
		}
		toRead = append(toRead, i)
	}
	j.report()
	return toRead, nil
}

func (j *backupJob) report() {
	if j.o.Progress != nil {
		j.o.Progress(Progress{DoneBytes: j.done.Load(), TotalBytes: j.size})
	}
}

// run reads, digests and uploads the blocks in toRead with j.workers
// goroutines, each holding a block buffer, an object buffer and a check buffer.
func (j *backupJob) run(ctx context.Context, toRead []int64) error {
	return eachByWorkers(ctx, j.workers, toRead, func() func(context.Context, int64) error {
		buf, check := make([]byte, j.bs), make([]byte, j.bs)
		scratch := make([]byte, 0, j.bs+j.bs/8)
		return func(ctx context.Context, i int64) error { return j.block(ctx, i, buf, scratch, check) }
	})
}

// block handles one block: read, zero check, digest, compare with the
// parent, deduplicate, encode (checking into check) and upload.
func (j *backupJob) block(ctx context.Context, i int64, buf, scratch, check []byte) error {
	off, l := i*j.bs, j.blockLen(i)
	data := buf[:l]
	if _, err := j.src.ReadAt(data, off); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // a short read would store a wrong block
		}
		return fmt.Errorf("read block %d of %s: %w", i, j.o.Source, err)
	}
	j.scanned.Add(l)
	defer func() { j.done.Add(l); j.report() }()
	if isZero(data) {
		j.zero.Add(1)
		return nil
	}
	d := blockDigest(j.cfg.keys.names, data)
	j.cur[i] = d
	if d == j.prev[i] {
		return nil
	}
	j.mu.Lock()
	seen := j.known[d]
	j.known[d] = true
	j.mu.Unlock()
	if seen {
		j.dedup.Add(1)
		return nil
	}
	obj, err := j.cfg.encodeBlock(data, d, scratch, check)
	if err != nil {
		return fmt.Errorf("block %d: %w", i, err)
	}
	// Bounded by the lease: no block lands after gc may have taken over.
	pctx, cancel := j.lease.bound(ctx)
	defer cancel()
	if err := j.put(pctx, blockKey(j.cfg.Chain, d.String()), obj); err != nil {
		return fmt.Errorf("upload block %d: %w", i, err)
	}
	j.uploaded.Add(l)
	j.stored.Add(int64(len(obj)))
	return nil
}

// manifest builds the new backup's self-contained manifest (version 2):
// every non-zero block of the volume image, and counts of the blocks that
// differ from the parent's image.
func (j *backupJob) manifest(start time.Time) *Manifest {
	o := j.o
	m := &Manifest{FormatVersion: FormatVersion, Chain: o.Chain, ID: j.id, CreatedAt: start.UTC(),
		SizeBytes: j.size, BlockSize: j.bs, VolumeMode: o.VolumeMode, FSType: o.FSType,
		SourceVolume: o.SourceVolume, Node: o.Node, GroupID: o.GroupID, Member: o.Member, Owner: o.Owner,
		StoredBytes: j.stored.Load(), Blocks: []BlockRef{}}
	if j.parent != nil {
		m.ParentID = j.parent.ID
		// Keep "latest" well defined even when clocks differ between nodes.
		if !m.CreatedAt.After(j.parent.CreatedAt) {
			m.CreatedAt = j.parent.CreatedAt.Add(time.Microsecond)
		}
	}
	for i, d := range j.cur {
		if !d.isZero() {
			m.Blocks = append(m.Blocks, BlockRef{Index: int64(i), Digest: d.String()})
		}
		switch {
		case d == j.prev[i]:
		case d.isZero():
			m.ZeroBlocks++
		default:
			m.DataBlocks++
			m.DataBytes += j.blockLen(int64(i))
		}
	}
	m.AllocatedBytes = allocatedBytes(j.size, j.bs, j.cur)
	m.VolumeDigest = volumeDigest(j.size, j.bs, j.cur)
	return m
}

func (j *backupJob) stats(m *Manifest, d time.Duration) BackupStats {
	return BackupStats{ScannedBytes: j.scanned.Load(), ChangedBytes: m.DataBytes,
		UploadedBytes: j.uploaded.Load(), StoredBytes: j.stored.Load(), Blocks: m.DataBlocks,
		ZeroBlocks: int(j.zero.Load()), DedupBlocks: int(j.dedup.Load()), Duration: d}
}

// commitBackup creates m's manifest while the writer lease l holds, with
// PutIfAbsent, so a backup never replaces another (a taken default id
// moves to a new draw; a taken requested id is ErrBackupExists), then
// confirms that every block it lists has an object no gc may still delete
// (j.confirm). Only then is the backup ready: in a chain with state
// records, once its ready record is created (FORMAT.md §7.5); on any
// failure before, the manifest is left unready there (never listed), or
// deleted again in an older chain (FORMAT.md §7).
func (r *Repo) commitBackup(ctx context.Context, j *backupJob, l *lease, m *Manifest) error {
	for {
		if err := l.valid(); err != nil {
			return err
		}
		j.cfg.sign(m)
		cctx, cancel := l.bound(ctx)
		err := r.createManifest(cctx, m)
		cancel()
		if errors.Is(err, store.ErrObjectExists) && j.o.BackupID == "" {
			m.ID = NewBackupID(m.CreatedAt) // a default id drawn twice: draw again
			continue
		}
		if errors.Is(err, store.ErrObjectExists) {
			return fmt.Errorf("%w: chain %q already has a backup %q", ErrBackupExists, m.Chain, m.ID)
		}
		if err != nil {
			r.retract(ctx, j.cfg, m) // the write may have landed before it failed
			return err
		}
		break
	}
	err := l.held(ctx)
	if err == nil {
		err = j.confirm(ctx, m)
	}
	if err == nil {
		if err = r.stillOwner(ctx, j.cfg, j.o); err != nil {
			r.disown(ctx, j.cfg, m, err)
		}
	}
	if err == nil {
		err = j.makeReady(ctx, m)
	}
	if err != nil {
		r.retract(ctx, j.cfg, m)
		return fmt.Errorf("backup %q of chain %q not committed: %w", m.ID, m.Chain, err)
	}
	return nil
}

// retract deletes m's manifest in a chain without state records if the
// stored one is exactly m (never another writer's) and holds no Object
// Lock retention (retained), so a backup that is not reported ready does
// not stay listed. Failures are left to Verify to
// find. A chain with state records never lists an unready manifest, so
// nothing is deleted there: a delete sent after such a check could land
// after the id was taken again (FORMAT.md §7.5).
func (r *Repo) retract(ctx context.Context, cfg *chainConfig, m *Manifest) {
	if cfg.ReadyRecords {
		return
	}
	ctx = context.WithoutCancel(ctx)
	key := manifestKey(m.Chain, m.ID)
	if got, err := r.store.GetMax(ctx, key, maxManifestBytes); err == nil && bytes.Equal(got, m.Encode()) && !r.retained(ctx, key) {
		_ = r.store.Delete(ctx, key)
	}
}

// retained reports whether key may carry Object Lock retention (or its
// retention cannot be read): a manifest is written without and given it
// only after its confirm (FORMAT.md §7.4), so one that has it is
// confirmed, and on a versioned bucket a plain DELETE would only put a
// delete marker over it, which readers read through until its date.
func (r *Repo) retained(ctx context.Context, key string) bool {
	if on, err := r.lock.active(ctx); err != nil || !on {
		return err != nil
	}
	ret, err := r.lock.l.Retention(ctx, key)
	return err != nil || ret.Mode != ""
}

// disown voids m in a chain with state records when err, stillOwner's,
// says the chain was taken over under it: m must never become ready, not
// even by Repo.ConfirmBackup. Any other failure to read the owner (the
// store, a cancelled context) is no takeover: m stays unready, and
// Repo.ConfirmBackup may still finish it. Failures leave it unready (a
// gc voids it later).
func (r *Repo) disown(ctx context.Context, cfg *chainConfig, m *Manifest, err error) {
	if cfg.ReadyRecords && errors.Is(err, ErrChainOwned) {
		_, _ = r.voidManifest(context.WithoutCancel(ctx), m)
	}
}

// createManifest stores a signed manifest under a key no other writer
// holds. A store without atomic create is refused (ErrNotAtomic wrapped in
// store.ErrBadTarget): an id could then be taken twice.
func (r *Repo) createManifest(ctx context.Context, m *Manifest) error {
	err := r.store.PutIfAbsent(ctx, manifestKey(m.Chain, m.ID), m.Encode())
	if errors.Is(err, store.ErrNotAtomic) {
		return errNoConditionalWrites(m.Chain, err)
	}
	if err != nil && !errors.Is(err, store.ErrObjectExists) {
		return fmt.Errorf("write manifest of backup %q in chain %q: %w", m.ID, m.Chain, err)
	}
	return err
}
