package durable

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// tempMark separates a temporary file's name from the random digits that
// os.CreateTemp appends. '~' is outside chainvol's object key alphabet
// (store.ValidateKey), so no object or state file is named like that.
const tempMark = "~tmp"

// TempPattern is the os.CreateTemp pattern of the temporary files of a
// write of a file named base: "." + base + "~tmp" + random digits, hidden
// from ls, beside the target.
func TempPattern(base string) string { return "." + base + tempMark + "*" }

// TempOf reports whether name (a file name, no directory) is that of a
// temporary file made by this package, and if so the base name of the
// file it was to become.
func TempOf(name string) (base string, ok bool) {
	i := strings.LastIndex(name, tempMark)
	if i < 2 || name[0] != '.' {
		return "", false
	}
	digits := name[i+len(tempMark):]
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return "", false
	}
	return name[1:i], true
}

// IsTemp reports whether name is that of a temporary file made by this
// package: what a write killed before its commit leaves.
func IsTemp(name string) bool {
	_, ok := TempOf(name)
	return ok
}

// RemoveTemps removes the temporary files that killed writes of path left
// beside it, for a file with one writer at a time (a checkpoint) whose
// directory has no sweep. A write of path running meanwhile fails.
// Errors: the first failed removal (absent files are fine).
func RemoveTemps(path string) error {
	dir, base := filepath.Split(path)
	ents, err := os.ReadDir(filepath.Clean(dir))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	var first error
	for _, e := range ents {
		if b, ok := TempOf(e.Name()); ok && b == base {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) && first == nil {
				first = err
			}
		}
	}
	return first
}
