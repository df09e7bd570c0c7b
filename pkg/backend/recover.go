package backend

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/internal/durable"
)

// recover brings the pool back to a state where every record is ready and
// every data file belongs to one, after a crash at any step. It runs in Open,
// before the pool is shared, and is idempotent (a crash inside it is fine).
func (p *FilePool) recover() error {
	recs, err := p.meta.all()
	if err != nil {
		return err
	}
	ready := make(map[string]bool, len(recs))
	for _, r := range recs {
		if err := p.settle(r); err != nil {
			return err
		}
		if r2, err := p.meta.get(r.ID); err == nil && r2.State == stateReady {
			ready[r.ID] = true
			if err := p.reconcileSize(r2); err != nil {
				return err
			}
		}
	}
	if err := p.removeStray(p.tmpDir, func(string) bool { return false }); err != nil {
		return err
	}
	return p.removeStray(p.dataDir, func(name string) bool {
		id, ok := strings.CutSuffix(name, ".img")
		return ok && ready[id]
	})
}

// settle finishes a record left half-way: "creating" rolls forward when its
// data file was published (it was fsynced before the rename, so it is whole)
// and back otherwise; "deleting" rolls forward. Ready records are untouched.
// The caller must hold the record's name (or be recover, before sharing).
func (p *FilePool) settle(r record) error {
	switch r.State {
	case stateReady:
		return nil
	case stateDeleting:
		klog.InfoS("Finishing interrupted delete", "id", r.ID, "name", r.Name)
		return p.finishDelete(r.ID)
	}
	if fi, err := os.Stat(p.dataPath(r.ID)); err == nil && fi.Size() == r.SizeBytes {
		klog.InfoS("Finishing interrupted create", "id", r.ID, "name", r.Name)
		if err := removeData(p.tmpPath(r.ID)); err != nil {
			return err
		}
		_, err := p.meta.update(r.ID, func(r *record) error { r.State = stateReady; return nil })
		return err
	}
	klog.InfoS("Rolling back interrupted create", "id", r.ID, "name", r.Name, "state", r.State)
	return p.finishDelete(r.ID)
}

// reconcileSize rolls an interrupted Resize forward: Resize grows the file
// before recording the size, so a file larger than its record is one.
func (p *FilePool) reconcileSize(r record) error {
	fi, err := os.Stat(p.dataPath(r.ID))
	if err != nil {
		// Not made by any crash of ours: keep the record, let an operator see it.
		klog.ErrorS(err, "Ready lvol has no data file", "id", r.ID, "name", r.Name)
		return nil
	}
	switch {
	case fi.Size() > r.SizeBytes:
		klog.InfoS("Finishing interrupted resize", "id", r.ID, "from", r.SizeBytes, "to", fi.Size())
		_, err = p.meta.update(r.ID, func(r *record) error { r.SizeBytes = fi.Size(); return nil })
		return err
	case fi.Size() < r.SizeBytes:
		klog.ErrorS(nil, "Data file smaller than its record; growing it", "id", r.ID, "file", fi.Size(), "record", r.SizeBytes)
		return growFile(p.dataPath(r.ID), r.SizeBytes)
	}
	return nil
}

// removeStray removes the regular files directly in dir that keep does not
// claim. It never descends into or removes subdirectories, symlinks' targets
// or anything outside dir.
func (p *FilePool) removeStray(dir string, keep func(name string) bool) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	for _, e := range ents {
		if keep(e.Name()) {
			continue
		}
		if e.Type()&fs.ModeType != 0 && e.Type()&fs.ModeSymlink == 0 {
			klog.InfoS("Leaving unexpected entry in pool dir", "path", filepath.Join(dir, e.Name()))
			continue
		}
		klog.InfoS("Removing orphan file", "path", filepath.Join(dir, e.Name()))
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove orphan: %w", err)
		}
	}
	return durable.SyncDir(dir)
}
