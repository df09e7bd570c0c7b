package s3chain

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"
)

// Backup stores the snapshot o.Source as a new backup of o.Chain and
// returns its manifest and counters. With o.Parent it is incremental: only
// blocks that differ from the parent's volume image are read and uploaded,
// found by comparing FIEMAP extents with o.Base when given, else by
// comparing every data block's digest; a parent deleted meanwhile only
// makes it compare against nothing. Holes and all-zero blocks are never
// uploaded; blocks already stored in the chain are not uploaded again. The
// backup holds a writer lease on the chain throughout (so gc keeps every
// block it may reuse) and creates its self-contained manifest last, with
// PutIfAbsent, only while the lease holds (FORMAT.md §7). Errors:
// ErrInvalidChain, ErrInvalidOptions (size, block size), ErrVolumeTooLarge
// (more than the chain holds: final), ErrBackupExists, ErrWrongKey,
// ErrChainBusy and ErrLeaseLost (retryable), store and I/O errors.
func (r *Repo) Backup(ctx context.Context, o BackupOptions) (*Manifest, BackupStats, error) {
	start := time.Now()
	ret, err := r.backupRetention(ctx, start) // before anything is written
	if err != nil {
		return nil, BackupStats{}, err
	}
	j, err := r.newBackupJob(ctx, &o)
	if err != nil {
		return nil, BackupStats{}, err
	}
	j.ret = ret
	defer j.close()
	l, lctx, err := r.holdConfigured(ctx, j)
	if err != nil {
		return nil, BackupStats{}, err
	}
	defer l.release(ctx)
	j.lease = l
	if err := r.checkOwner(lctx, j.cfg, &o); err != nil {
		return nil, BackupStats{}, leaseErr(ctx, lctx, err)
	}
	m, err := j.do(lctx, start)
	if err != nil {
		return nil, BackupStats{}, leaseErr(ctx, lctx, err)
	}
	if err := r.commitBackup(lctx, j, l, m); err != nil {
		return nil, BackupStats{}, leaseErr(ctx, lctx, err)
	}
	return m, j.stats(m, time.Since(start)), nil
}

// newChainBlockSize is the block size a backup asks for: the requested
// one, else for a volume of size bytes the default, doubled until the volume
// fits in MaxBlocks blocks (so a 4 TiB volume gets 4 MiB blocks without
// being asked). An existing chain keeps its own size whatever this says
// (Repo.backupChain compares only a requested size).
func newChainBlockSize(requested, size int64) int64 {
	if requested != 0 {
		return requested
	}
	bs := int64(DefaultBlockSize)
	for (size+bs-1)/bs > MaxBlocks && bs < MaxBlockSize {
		bs *= 2
	}
	if bs == DefaultBlockSize {
		return 0 // the default: no conflict with any existing chain
	}
	return bs
}

// holdConfigured takes the writer lease and then checks that the config
// j opened is still the chain's: gc removes an emptied chain's config, but
// never while a writer holds the chain, so from here on the blocks this
// backup names with the config's keys belong to a chain that exists. A
// config removed before is opened (or created) again.
func (r *Repo) holdConfigured(ctx context.Context, j *backupJob) (*lease, context.Context, error) {
	for range 3 {
		l, lctx, err := r.holdWriter(ctx, j.o.Chain)
		if err != nil {
			return nil, nil, err
		}
		err = r.checkConfig(lctx, j.cfg)
		if err == nil {
			return l, lctx, nil
		}
		l.release(ctx)
		if !errors.Is(err, ErrChainBusy) {
			return nil, nil, err
		}
		if j.cfg, err = r.backupChain(ctx, j.o.Chain, j.o.BlockSize, j.size, j.o.Owner); err != nil {
			return nil, nil, err
		}
		j.bs = j.cfg.BlockSize
	}
	return nil, nil, fmt.Errorf("%w: the config of chain %q keeps changing", ErrChainBusy, j.o.Chain)
}

// do reads the chain and the source and uploads the blocks; it returns the
// manifest to commit.
func (j *backupJob) do(ctx context.Context, start time.Time) (*Manifest, error) {
	if err := j.load(ctx); err != nil {
		return nil, err
	}
	toRead, err := j.plan()
	if err != nil {
		return nil, err
	}
	if err := j.run(ctx, toRead); err != nil {
		return nil, fmt.Errorf("backup %q of chain %q: %w", j.id, j.o.Chain, err)
	}
	return j.manifest(start), nil
}

// newBackupJob validates the options, opens the source and base, and opens
// (or creates) the chain.
func (r *Repo) newBackupJob(ctx context.Context, o *BackupOptions) (j *backupJob, err error) {
	if err := ValidChainName(o.Chain); err != nil {
		return nil, err
	}
	if o.BackupID != "" {
		if err := ValidBackupID(o.BackupID); err != nil {
			return nil, err
		}
	}
	j = &backupJob{r: r, o: o, workers: o.Workers}
	if j.workers <= 0 {
		j.workers = DefaultWorkers
	}
	opened := j // the named result is nil on the error paths below
	defer func() {
		if err != nil {
			opened.close()
		}
	}()
	if err := j.openFiles(); err != nil {
		return nil, err
	}
	if j.cfg, err = r.backupChain(ctx, o.Chain, o.BlockSize, j.size, o.Owner); err != nil {
		return nil, err
	}
	j.bs = j.cfg.BlockSize
	return j, nil
}

// backupChain opens the chain a backup of size bytes asking block size
// requested (0: none) goes into, creating it with newChainBlockSize when
// it has no config. An existing chain keeps its own block size: only a
// requested one is compared with it, so a volume grown past its chain's
// limit reads ErrVolumeTooLarge, not a block size it never asked for.
// Errors: those of Repo.chain, ErrVolumeTooLarge.
func (r *Repo) backupChain(ctx context.Context, chain string, requested, size int64, owner string) (*chainConfig, error) {
	cfg, err := r.chain(ctx, chain, nil)
	if errors.Is(err, ErrBackupNotFound) {
		cfg, err = r.chain(ctx, chain, &newChain{newChainBlockSize(requested, size), owner})
	}
	if err != nil {
		return nil, err
	}
	if requested != 0 && requested != cfg.BlockSize {
		return nil, fmt.Errorf("%w: block size %d bytes differs from chain %q's %d, fixed by its first backup: ask for none (or %d), or use a new chain",
			ErrInvalidOptions, requested, chain, cfg.BlockSize, cfg.BlockSize)
	}
	return cfg, checkFits(chain, size, cfg.BlockSize)
}

// load reads what the backup builds on: the parent's volume image, whose
// blocks are the ones it need not upload again (they stay while this
// backup's lease holds), and checks a requested id is free. It reads no
// other manifest: a backup's fixed cost does not grow with its chain.
func (j *backupJob) load(ctx context.Context) error {
	if err := j.loadParent(ctx); err != nil {
		return err
	}
	j.id = j.o.BackupID
	if j.id == "" {
		j.id = NewBackupID(time.Now()) // taken (never in practice): the commit draws another
	} else if _, err := j.r.store.Stat(ctx, manifestKey(j.o.Chain, j.id)); err == nil && j.cfg.ReadyRecords {
		return fmt.Errorf("%w: chain %q already has a manifest %q (unlisted if it never became ready: a running or failed backup, which gc removes after its min-age; FORMAT.md §7.5): choose another id", ErrBackupExists, j.o.Chain, j.id)
	} else if err == nil {
		return fmt.Errorf("%w: chain %q already has a backup %q", ErrBackupExists, j.o.Chain, j.id)
	} else if j.cfg.ReadyRecords && j.r.idDecided(ctx, j.o.Chain, j.id) {
		return errIDUsed(j.o.Chain, j.id) // checked again by markReady
	}
	j.known = map[digest]bool{}
	for _, d := range j.parentMap {
		if !d.isZero() {
			j.known[d] = true
		}
	}
	return nil
}

// backupIDTime is the layout of default backup ids: the UTC start time.
const backupIDTime = "20060102T150405Z"

func (j *backupJob) openFiles() error {
	var err error
	if j.src, err = os.Open(j.o.Source); err != nil {
		return fmt.Errorf("open backup source: %w", err)
	}
	srcSize, _, err := fileSize(j.src)
	if err != nil {
		return fmt.Errorf("size of backup source %s: %w", j.o.Source, err)
	}
	j.size = j.o.SizeBytes
	if j.size == 0 {
		j.size = srcSize
	}
	if j.size < 0 || j.size > srcSize {
		return fmt.Errorf("%w: size %d bytes, but source %s has %d", ErrInvalidOptions, j.size, j.o.Source, srcSize)
	}
	if lim := MaxVolumeSize(MaxBlockSize); j.size > lim {
		return fmt.Errorf("%w: %d bytes is more than any chain holds: %d bytes (%d blocks of %d bytes)", ErrVolumeTooLarge, j.size, lim, MaxBlocks, MaxBlockSize)
	}
	if j.o.Base != "" && j.o.Parent != "" {
		if j.base, err = os.Open(j.o.Base); err != nil {
			return fmt.Errorf("open base snapshot: %w", err)
		}
	}
	return nil
}

// loadParent loads the verified volume image of o.Parent, which the new
// backup is compared against. Any backup of the chain may be the parent
// (two writers on one parent make a fork, which every reader handles). A
// parent that no longer exists only costs reading every block.
func (j *backupJob) loadParent(ctx context.Context) error {
	if j.o.Parent == "" {
		return nil
	}
	_, path, blocks, err := j.r.resolve(ctx, j.o.Chain, j.o.Parent)
	if errors.Is(err, ErrBackupNotFound) || errors.Is(err, ErrChainBroken) {
		j.closeBase() // deleted while we looked
		return nil
	}
	if err != nil {
		return err
	}
	j.parent, j.parentMap = path[0], blocks
	return nil
}

// randomHex returns 2n random lower-case hex digits.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// knownDigests is the set of blocks the manifests all reference (gc's
// live set).
func knownDigests(all []*Manifest) map[digest]bool {
	known := map[digest]bool{}
	for _, m := range all {
		addDigests(known, m)
	}
	return known
}

// addDigests adds the blocks m references to set.
func addDigests(set map[digest]bool, m *Manifest) {
	for _, b := range m.Blocks {
		if d, err := parseDigest(b.Digest); err == nil && !d.isZero() {
			set[d] = true
		}
	}
}
