package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/chainvol/chainvol/internal/durable"
)

// fileStore keeps each object as a regular file under root: key "a/b/c" is
// the file root/a/b/c. It is the embedded default target for one machine.
//
// A Put is durable.WriteFile (a temporary file next to the target,
// fsynced, renamed over it, the directory fsynced), so a crash leaves the
// old or the new object, never a torn one; PutIfAbsent is
// durable.CreateFile, with link(2), which fails with EEXIST rather than
// replace. Temporary names (durable.TempPattern) contain '~', outside the
// key alphabet, so List never reports them; those of killed writers stay
// until SweepTemps (gc of the whole target) removes them. Because objects are files and prefixes are
// directories, a key cannot also be the parent of other keys ("a" and
// "a/b"): such a Put fails with ErrInvalidKey; the chain format never
// needs it. Delete prunes directories it
// empties so that deleted chains leave nothing behind.
type fileStore struct {
	root string // absolute, cleaned, an existing directory
}

// newFileStore opens the existing directory root. Errors: ErrBadTarget when
// root is missing or not a directory.
func newFileStore(root string) (*fileStore, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("%w: file target %s: %v", ErrBadTarget, root, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: file target %s is not a directory", ErrBadTarget, root)
	}
	return &fileStore{root: root}, nil
}

func (s *fileStore) String() string { return "file://" + filepath.ToSlash(s.root) }

func (s *fileStore) path(key string) string { return filepath.Join(s.root, filepath.FromSlash(key)) }

func (s *fileStore) Put(ctx context.Context, key string, data []byte) error {
	return s.write(ctx, "put", key, func(p string) error { return durable.WriteFile(p, data, 0o644) })
}

// PutIfAbsent creates the object with durable.CreateFile: link(2), unlike
// rename(2), fails with EEXIST instead of replacing, so of racing writers
// exactly one wins, and readers never see a partial object. A filesystem
// without hard links answers ErrNotAtomic.
func (s *fileStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	err := s.write(ctx, "put-if-absent", key, func(p string) error {
		err := durable.CreateFile(p, data, 0o644)
		if errors.Is(err, fs.ErrExist) {
			if fi, serr := os.Lstat(p); serr == nil && fi.Mode().IsRegular() {
				return errObjectExists
			}
		}
		return err
	})
	switch {
	case errors.Is(err, errObjectExists):
		return fmt.Errorf("file put-if-absent %q: %w", key, ErrObjectExists)
	case errors.Is(err, durable.ErrNoHardLinks):
		return fmt.Errorf("file put-if-absent %q: %w: %w", key, ErrNotAtomic, err)
	}
	return err
}

// errObjectExists: CreateFile found an object (a regular file) at the
// name; EEXIST on a directory stays EEXIST (the key is a prefix of other
// keys).
var errObjectExists = errors.New("object exists")

// write stores an object under key with commit, which writes the file at
// its path durably (durable.WriteFile for Put, CreateFile for
// PutIfAbsent), after creating the missing parents durably.
func (s *fileStore) write(ctx context.Context, op, key string, commit func(p string) error) error {
	if err := checkKey(ctx, key); err != nil {
		return err
	}
	p := s.path(key)
	// A concurrent Delete may prune the parent directory between MkdirAll and
	// the temporary file; creating it again is then the right answer.
	var err error
	for range 3 {
		if err = durable.MkdirAll(filepath.Dir(p), 0o755); err == nil {
			err = commit(p)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if errors.Is(err, errObjectExists) || errors.Is(err, durable.ErrNoHardLinks) {
		return err
	}
	// ENOTDIR: a parent is an object. EISDIR, EEXIST, ENOTEMPTY: rename(2)
	// or link(2) onto a directory, i.e. the key is a prefix.
	if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR) ||
		errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.ENOTEMPTY) {
		return fmt.Errorf("file %s %q: %w: a key cannot be both an object and a prefix of other keys in a file store: %v",
			op, key, ErrInvalidKey, err)
	}
	if err != nil {
		return fmt.Errorf("file %s %q: %w", op, key, err)
	}
	return nil
}

func (s *fileStore) Get(ctx context.Context, key string) ([]byte, error) {
	return s.GetMax(ctx, key, maxObjectSize)
}

// GetMax checks the size fstat reports before reading, reads exactly that
// many bytes and then one more to catch a file that grew meanwhile, so it
// never holds more than min(size, maxBytes)+1 bytes.
func (s *fileStore) GetMax(ctx context.Context, key string, maxBytes int64) ([]byte, error) {
	if err := checkKey(ctx, key); err != nil {
		return nil, err
	}
	f, err := os.Open(s.path(key))
	if err != nil {
		return nil, fileError("get", key, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fs.ErrNotExist // a directory is a prefix, not an object
	}
	if err != nil {
		return nil, fileError("get", key, err)
	}
	if err := checkSize("file", key, fi.Size(), maxBytes); err != nil {
		return nil, err
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("file get %q: read %d bytes: %w", key, fi.Size(), err)
	}
	if n, _ := f.Read(make([]byte, 1)); n > 0 {
		return nil, fmt.Errorf("file get %q: %w: it grew past its fstat size %d while read, bound %d bytes",
			key, ErrObjectTooLarge, fi.Size(), max(maxBytes, 0))
	}
	return data, nil
}

// checkSize fails with ErrObjectTooLarge when size exceeds maxBytes.
func checkSize(store, key string, size, maxBytes int64) error {
	if size > max(maxBytes, 0) {
		return fmt.Errorf("%s get %q: %w: %d bytes, bound %d bytes", store, key, ErrObjectTooLarge, size, max(maxBytes, 0))
	}
	return nil
}

func (s *fileStore) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := checkKey(ctx, key); err != nil {
		return ObjectInfo{}, err
	}
	fi, err := os.Stat(s.path(key))
	if err == nil && !fi.Mode().IsRegular() {
		err = fs.ErrNotExist // a directory is a prefix, not an object
	}
	if err != nil {
		return ObjectInfo{}, fileError("stat", key, err)
	}
	return ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

func (s *fileStore) Delete(ctx context.Context, key string) error {
	if err := checkKey(ctx, key); err != nil {
		return err
	}
	p := s.path(key)
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return nil // a prefix, not an object: nothing to delete
	}
	if err := os.Remove(p); err != nil {
		if err = fileError("delete", key, err); errors.Is(err, ErrObjectNotFound) {
			return nil
		}
		return err
	}
	s.pruneDirs(filepath.Dir(p))
	return nil
}

// fileError maps a missing file (or a file where a directory was expected,
// ENOTDIR, or a directory where a file was expected, EISDIR) to
// ErrObjectNotFound.
func fileError(op, key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR) {
		return fmt.Errorf("file %s %q: %w", op, key, ErrObjectNotFound)
	}
	return fmt.Errorf("file %s %q: %w", op, key, err)
}

func (s *fileStore) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidatePrefix(prefix); err != nil {
		return err
	}
	return s.walk(ctx, "", prefix, fn)
}

// walk lists directory rel (a key prefix ending in "/", or "" for root).
// Entries are sorted by their key ("name" for files, "name/" for
// directories) rather than by name: "a-c" sorts before "a/b" because '-'
// and '.' sort before '/', which a plain name sort of "a" and "a-c" misses.
func (s *fileStore) walk(ctx context.Context, rel, prefix string, fn func(ObjectInfo) error) error {
	entries, err := os.ReadDir(filepath.Join(s.root, filepath.FromSlash(rel)))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // pruned by a concurrent Delete
		}
		return fmt.Errorf("file list %q: %w", rel, err)
	}
	type entry struct {
		key string
		de  fs.DirEntry
	}
	var es []entry
	for _, de := range entries {
		key := rel + de.Name()
		if de.IsDir() {
			key += "/"
		}
		es = append(es, entry{key, de})
	}
	slices.SortFunc(es, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	for _, e := range es {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Descend only where the prefix can still match.
		if !strings.HasPrefix(e.key, prefix) && !strings.HasPrefix(prefix, e.key) {
			continue
		}
		if e.de.IsDir() {
			if err := s.walk(ctx, e.key, prefix, fn); err != nil {
				return err
			}
			continue
		}
		if !e.de.Type().IsRegular() || !strings.HasPrefix(e.key, prefix) || ValidateKey(e.key) != nil {
			continue // temporary files and strangers are not objects
		}
		fi, err := e.de.Info()
		if err != nil {
			continue // deleted since ReadDir
		}
		if err := fn(ObjectInfo{Key: e.key, Size: fi.Size(), ModTime: fi.ModTime()}); err != nil {
			return err
		}
	}
	return nil
}

func checkKey(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return ValidateKey(key)
}
