package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chainvol/chainvol/internal/durable"
)

// isTempName reports whether a file name is that of the temporary file of
// a write of an object: durable's `.KEY~tmpNNN` (durable.TempOf), or
// `KEY~tmpNNN` as the store wrote before it, KEY a valid key segment.
// '~' is outside the key alphabet, so no object is ever named like that.
func isTempName(name string) bool {
	base, ok := durable.TempOf(name)
	if !ok {
		base, ok = durable.TempOf("." + name)
	}
	return ok && ValidateKey(base) == nil
}

// SweepTemps removes the temporary files of writers that died between
// their temporary file and its rename or link (killed, or the node lost power):
// nothing else ever removes them. The grace olderThan keeps the files of
// writes in progress, which take seconds. Should it remove the file of a
// live writer paused for longer (SIGSTOP, a frozen VM), that writer's
// rename or link fails with ENOENT: write then starts over with a new
// temporary file, and at worst its Put fails with an error. Data is never
// harmed, since an object's name only ever receives a complete, fsynced
// file. Directories the removals empty are pruned, as Delete prunes them.
func (s *fileStore) SweepTemps(ctx context.Context, olderThan time.Duration, dryRun bool) (files int, bytes int64, err error) {
	now := time.Now()
	emptied := map[string]bool{}
	err = filepath.WalkDir(s.root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // pruned by a concurrent Delete
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !de.Type().IsRegular() || !isTempName(de.Name()) {
			return nil
		}
		fi, err := de.Info()
		if errors.Is(err, fs.ErrNotExist) || (err == nil && now.Sub(fi.ModTime()) < olderThan) {
			return nil // committed meanwhile, or perhaps still being written
		}
		if err != nil {
			return err
		}
		if !dryRun {
			if err := os.Remove(p); errors.Is(err, fs.ErrNotExist) {
				return nil
			} else if err != nil {
				return err
			}
			emptied[filepath.Dir(p)] = true
		}
		files++
		bytes += fi.Size()
		return nil
	})
	for dir := range emptied {
		s.pruneDirs(dir)
	}
	if err != nil {
		return files, bytes, fmt.Errorf("file sweep of temporary files under %s: %w", s.root, err)
	}
	return files, bytes, nil
}

// pruneDirs removes dir and then its parents up to (not including) the
// root while they are empty; rmdir fails harmlessly on a non-empty one. A
// writer that loses its directory to this race creates it again (write).
func (s *fileStore) pruneDirs(dir string) {
	for ; dir != s.root && strings.HasPrefix(dir, s.root); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			break
		}
	}
}
