package backend

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// FilePool is a Pool kept in one directory of the node:
//
//	DIR/pool.db          bbolt metadata: records by id, name indexes per kind
//	DIR/lvols/<id>.img   one sparse data file per ready lvol (and, until its
//	                     record is committed, per lvol being made)
//	DIR/tmp/             the reflink probe's files; data files being made by
//	                     drivers before session 10 (renamed into lvols/)
//
// It is safe for concurrent use within one process; bbolt's file lock keeps a
// second process from opening the same pool.
type FilePool struct {
	dir     string // absolute
	dataDir string
	tmpDir  string
	meta    *metaStore
	reflink bool
	locks   keyLocks
}

var _ Pool = (*FilePool)(nil)

// Option changes how Open sets up a pool.
type Option func(*options)

type options struct{ noReflink bool }

// WithoutReflink makes the pool use full sparse copies for clones and
// snapshots even where the filesystem supports reflink (tests, benchmarks).
func WithoutReflink() Option { return func(o *options) { o.noReflink = true } }

// Open opens the pool in dir, creating dir and its layout if needed. Before
// returning it recovers from any earlier crash: records left "creating" are
// rolled forward (their data file is whole) or back, those left "deleting"
// are finished, and files in lvols/ or tmp/ without a ready record are
// removed. It then probes reflink (FICLONE) once and logs when it is absent.
// Errors: the directory cannot be made, the metadata cannot be opened (also
// after 10 seconds when another process holds it), or recovery failed.
func Open(dir string, opts ...Option) (*FilePool, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("pool dir %q: %w", dir, err)
	}
	p := &FilePool{dir: abs, dataDir: filepath.Join(abs, "lvols"), tmpDir: filepath.Join(abs, "tmp")}
	for _, d := range []string{p.dataDir, p.tmpDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("make pool dir: %w", err)
		}
	}
	if p.meta, err = openMeta(filepath.Join(abs, "pool.db")); err != nil {
		return nil, err
	}
	if err := p.recover(); err != nil {
		p.meta.close()
		return nil, fmt.Errorf("recover pool %s: %w", abs, err)
	}
	reason := "disabled by option"
	if !o.noReflink {
		p.reflink, reason = probeReflink(p.tmpDir)
	}
	if !p.reflink {
		klog.InfoS("Pool has no reflink: clones and snapshots are full sparse copies, O(written data)",
			"dir", abs, "reason", reason)
	}
	return p, nil
}

// Close releases the metadata store; the pool must not be used afterwards.
func (p *FilePool) Close() error { return p.meta.close() }

// Reflink reports whether clones and snapshots are O(1) reflinks (FICLONE)
// rather than full copies; it was probed once by Open.
func (p *FilePool) Reflink() bool { return p.reflink }

// Capacity returns the size and the space available to unprivileged users
// (f_bavail) of the filesystem holding the pool, in bytes, from statfs(2).
func (p *FilePool) Capacity(ctx context.Context) (Capacity, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(p.dir, &st); err != nil {
		return Capacity{}, fmt.Errorf("statfs %s: %w", p.dir, err)
	}
	return Capacity{
		TotalBytes:     int64(st.Blocks) * st.Bsize,
		AvailableBytes: int64(st.Bavail) * st.Bsize,
	}, nil
}

// DataPath returns the absolute path of the data file of the ready lvol id.
// Errors: ErrNotFound (also for an id not matching IDPattern).
func (p *FilePool) DataPath(id string) (string, error) {
	if _, err := p.readyRecord(id); err != nil {
		return "", err
	}
	return p.dataPath(id), nil
}

// dataPath and tmpPath must only be called with ids that passed ValidID.
func (p *FilePool) dataPath(id string) string { return filepath.Join(p.dataDir, id+".img") }
func (p *FilePool) tmpPath(id string) string  { return filepath.Join(p.tmpDir, id+".img") }
