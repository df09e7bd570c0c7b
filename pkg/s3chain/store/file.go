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
)

// fileStore keeps each object as a regular file under root: key "a/b/c" is
// the file root/a/b/c. It is the embedded default target for one machine.
//
// A Put writes a temporary file next to the target, fsyncs it, renames it
// over the target and fsyncs the directory, so a crash leaves the old or
// the new object, never a torn one (rename(2) is atomic within a
// filesystem). PutIfAbsent does the same with link(2), which fails with
// EEXIST rather than replace, and then removes the temporary name.
// Temporary names contain '~', outside the key alphabet, so List never
// reports them; those of killed writers stay until SweepTemps (gc of the
// whole target) removes them. Because objects are files and prefixes are
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
	return s.write(ctx, "put", key, data, os.Rename)
}

// PutIfAbsent links a fully written temporary file to the key: link(2),
// unlike rename(2), fails with EEXIST instead of replacing, so of racing
// writers exactly one wins, and readers never see a partial object.
// A filesystem without hard links answers ErrNotAtomic.
func (s *fileStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	err := s.write(ctx, "put-if-absent", key, data, linkNew)
	switch {
	case errors.Is(err, errLinkExists):
		return fmt.Errorf("file put-if-absent %q: %w", key, ErrObjectExists)
	case errors.Is(err, errNoLinks):
		return fmt.Errorf("file put-if-absent %q: %w: %w", key, ErrNotAtomic, err)
	}
	return err
}

var (
	// errLinkExists: linkNew found an object (a regular file) at the name.
	errLinkExists = errors.New("link target exists")
	// errNoLinks: the filesystem refuses hard links (link(2) EPERM "the
	// filesystem does not support the creation of hard links", ENOTSUP).
	errNoLinks = errors.New("this filesystem has no hard links")
)

// linkNew hard-links the finished temporary file tmp to p and removes tmp.
// EEXIST on a regular file is errLinkExists; on a directory it stays
// EEXIST (the key is a prefix of other keys).
func linkNew(tmp, p string) error {
	err := os.Link(tmp, p)
	os.Remove(tmp)
	switch {
	case errors.Is(err, fs.ErrExist):
		if fi, serr := os.Lstat(p); serr == nil && fi.Mode().IsRegular() {
			return errLinkExists
		}
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.ENOTSUP), errors.Is(err, syscall.EOPNOTSUPP):
		return fmt.Errorf("%w: %w", errNoLinks, err)
	}
	return err
}

// write stores data under key through a temporary file that commit moves
// to its final path (rename for Put, link for PutIfAbsent).
func (s *fileStore) write(ctx context.Context, op, key string, data []byte, commit func(tmp, p string) error) error {
	if err := checkKey(ctx, key); err != nil {
		return err
	}
	p := s.path(key)
	// A concurrent Delete may prune the parent directory between MkdirAll and
	// CreateTemp; creating it again is then the right answer.
	var err error
	for range 3 {
		var created bool
		if created, err = s.mkdirs(filepath.Dir(p)); err != nil {
			break
		}
		if err = writeFileAtomic(p, data, commit); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && created {
			err = s.syncParents(filepath.Dir(p))
		}
		break
	}
	if errors.Is(err, errLinkExists) || errors.Is(err, errNoLinks) {
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

// mkdirs creates dir and its missing parents and reports whether it had to.
func (s *fileStore) mkdirs(dir string) (created bool, err error) {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return false, nil
	}
	return true, os.MkdirAll(dir, 0o755)
}

// syncParents fsyncs the parents of dir up to the root, so that the
// entries of directories Put created survive a crash along with the
// object in them.
func (s *fileStore) syncParents(dir string) error {
	for d := filepath.Dir(dir); strings.HasPrefix(d, s.root); d = filepath.Dir(d) {
		if err := syncDir(d); err != nil {
			return err
		}
		if d == s.root {
			break
		}
	}
	return nil
}

// writeFileAtomic writes data to a temporary file in p's directory, fsyncs
// it, commits it to p (rename or link) and fsyncs the directory so the
// commit is durable.
func writeFileAtomic(p string, data []byte, commit func(tmp, p string) error) (err error) {
	dir := filepath.Dir(p)
	f, err := createTemp(p)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = commit(f.Name(), p); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
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
