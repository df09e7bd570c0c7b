package s3chain

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"
)

// Backup stores the snapshot o.Source as a new backup of o.Chain and
// returns its manifest and counters. With o.Parent it is incremental: only
// blocks that differ from the parent's volume image are listed, found by
// comparing FIEMAP extents with o.Base when given (reading only changed
// blocks), else by comparing every data block's digest. Holes and all-zero
// blocks are never uploaded; blocks already stored in the chain are not
// uploaded again. The manifest is written last, so a failed backup leaves
// only unreferenced blocks (removed by GC). Errors: ErrInvalidChain,
// ErrInvalidOptions (parent not the latest, size, block size),
// ErrBackupNotFound (parent), ErrBackupExists, ErrWrongKey, ErrChainBroken
// (the parent's chain), store and I/O errors.
func (r *Repo) Backup(ctx context.Context, o BackupOptions) (*Manifest, BackupStats, error) {
	start := time.Now()
	j, err := r.newBackupJob(ctx, &o)
	if err != nil {
		return nil, BackupStats{}, err
	}
	defer j.close()
	// The marker precedes reading the manifests, whose blocks this backup
	// may reuse: GC lists blocks, then markers, then manifests (FORMAT.md §7).
	marker, err := r.putPending(ctx, j.cfg)
	if err != nil {
		return nil, BackupStats{}, err
	}
	// The marker goes even when ctx was cancelled: GC would otherwise skip
	// this chain until the marker expires.
	defer r.store.Delete(context.WithoutCancel(ctx), marker)
	if err := j.load(ctx); err != nil {
		return nil, BackupStats{}, err
	}
	toRead, err := j.plan()
	if err != nil {
		return nil, BackupStats{}, err
	}
	if err := j.run(ctx, toRead); err != nil {
		return nil, BackupStats{}, fmt.Errorf("backup %q of chain %q: %w", j.id, o.Chain, err)
	}
	m := j.manifest(start)
	if err := r.commitBackup(ctx, j.cfg, m); err != nil {
		return nil, BackupStats{}, err
	}
	st := j.stats(m, time.Since(start))
	return m, st, nil
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
	if j.cfg, err = r.chain(ctx, o.Chain, true, o.BlockSize); err != nil {
		return nil, err
	}
	j.bs = j.cfg.BlockSize
	if (j.size+j.bs-1)/j.bs > MaxBlocks {
		return nil, fmt.Errorf("%w: %d bytes is more than %d blocks of %d bytes", ErrInvalidOptions, j.size, MaxBlocks, j.bs)
	}
	return j, nil
}

// load reads the chain's manifests: the parent's volume image, a free
// backup id and the blocks already stored.
func (j *backupJob) load(ctx context.Context) error {
	all, err := j.r.Backups(ctx, j.o.Chain)
	if err != nil {
		return err
	}
	if err := j.loadParent(ctx, all); err != nil {
		return err
	}
	if j.id, err = newBackupID(all, j.o.BackupID, time.Now()); err != nil {
		return err
	}
	j.known = knownDigests(all)
	return nil
}

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
	if j.size < 0 || j.size > srcSize || j.size > MaxBlocks*MaxBlockSize {
		return fmt.Errorf("%w: size %d bytes, but source %s has %d", ErrInvalidOptions, j.size, j.o.Source, srcSize)
	}
	if j.o.Base != "" && j.o.Parent != "" {
		if j.base, err = os.Open(j.o.Base); err != nil {
			return fmt.Errorf("open base snapshot: %w", err)
		}
	}
	return nil
}

// loadParent checks that o.Parent is the chain's latest backup and loads
// its verified volume image, which the new backup is compared against.
func (j *backupJob) loadParent(ctx context.Context, all []*Manifest) error {
	if j.o.Parent == "" {
		return nil
	}
	i := slices.IndexFunc(all, func(m *Manifest) bool { return m.ID == j.o.Parent })
	if i < 0 {
		return fmt.Errorf("%w: parent %q of a backup of chain %q", ErrBackupNotFound, j.o.Parent, j.o.Chain)
	}
	if latest := all[len(all)-1]; latest.ID != j.o.Parent {
		return fmt.Errorf("%w: parent %q is not chain %q's latest backup %q", ErrInvalidOptions, j.o.Parent, j.o.Chain, latest.ID)
	}
	_, _, blocks, err := j.r.resolve(ctx, j.o.Chain, j.o.Parent)
	if err != nil {
		return err
	}
	j.parent, j.parentMap = all[i], blocks
	return nil
}

// newBackupID returns want if free, else the UTC time like
// 20261129T101500Z, suffixed "-2", "-3"... until unique in the chain.
func newBackupID(all []*Manifest, want string, now time.Time) (string, error) {
	taken := map[string]bool{}
	for _, m := range all {
		taken[m.ID] = true
	}
	if want != "" {
		if taken[want] {
			return "", fmt.Errorf("%w: %q", ErrBackupExists, want)
		}
		return want, nil
	}
	id := now.UTC().Format("20060102T150405Z")
	for k := 2; taken[id]; k++ {
		id = fmt.Sprintf("%s-%d", now.UTC().Format("20060102T150405Z"), k)
	}
	return id, nil
}

// knownDigests is the set of blocks some manifest of the chain references:
// their objects exist, so the backup need not upload them again.
func knownDigests(all []*Manifest) map[digest]bool {
	known := map[digest]bool{}
	for _, m := range all {
		for _, b := range m.Blocks {
			if d, err := parseDigest(b.Digest); err == nil && !d.isZero() {
				known[d] = true
			}
		}
	}
	return known
}
