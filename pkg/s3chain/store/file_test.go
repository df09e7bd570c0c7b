package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

func openFile(t *testing.T, dir string) store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), "file://"+dir, store.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFileStoreSuite(t *testing.T) {
	storetest.RunSuite(t, func(t *testing.T) store.Store { return openFile(t, t.TempDir()) })
}

// A crash between CreateTemp and rename leaves a temporary file; it must
// never be listed as an object, and Put must leave none behind.
func TestFileStoreHidesTempFiles(t *testing.T) {
	dir := t.TempDir()
	s := openFile(t, dir)
	ctx := context.Background()
	if err := s.Put(ctx, "c/obj", []byte("data")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "c", "obj~tmp123"), []byte("torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := s.List(ctx, "", func(i store.ObjectInfo) error { keys = append(keys, i.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, []string{"c/obj"}) {
		t.Fatalf("List = %q, want [c/obj]", keys)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "c", "*"))
	if len(names) != 2 {
		t.Fatalf("files in c/: %q, want obj and the planted temp file only", names)
	}
}

// Delete prunes the directories it empties, up to (not including) the root.
func TestFileStoreDeletePrunesDirs(t *testing.T) {
	dir := t.TempDir()
	s := openFile(t, dir)
	ctx := context.Background()
	if err := s.Put(ctx, "a/b/c/obj", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "a/b/c/obj"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a/ still exists after deleting its only object: %v", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("root removed: %v", err)
	}
}

// Files cannot be directories: "a" and "a/b" cannot both be objects. The
// conflict is reported as ErrInvalidKey and changes nothing.
func TestFileStoreKeyPrefixConflict(t *testing.T) {
	s := openFile(t, t.TempDir())
	ctx := context.Background()
	for _, tc := range [][2]string{{"k/a", "k/a/b"}, {"j/a/b", "j/a"}} {
		if err := s.Put(ctx, tc[0], []byte("1")); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, tc[1], []byte("2")); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Put(%q) after Put(%q) = %v, want ErrInvalidKey", tc[1], tc[0], err)
		}
		if err := s.PutIfAbsent(ctx, tc[1], []byte("3")); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("PutIfAbsent(%q) after Put(%q) = %v, want ErrInvalidKey (not ErrObjectExists)", tc[1], tc[0], err)
		}
		if got, err := s.Get(ctx, tc[0]); err != nil || string(got) != "1" {
			t.Errorf("Get(%q) = %q, %v; want \"1\"", tc[0], got, err)
		}
	}
}

// PutIfAbsent, won or lost, leaves no temporary file behind: link(2)
// gives the object its name and the temporary name is removed.
func TestFileStorePutIfAbsentNoTempFiles(t *testing.T) {
	dir := t.TempDir()
	s := openFile(t, dir)
	ctx := context.Background()
	if err := s.PutIfAbsent(ctx, "c/lock", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx, "c/lock", []byte("two")); !errors.Is(err, store.ErrObjectExists) {
		t.Fatalf("second PutIfAbsent = %v, want ErrObjectExists", err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "c", "*"))
	if len(names) != 1 || filepath.Base(names[0]) != "lock" {
		t.Fatalf("files in c/: %q, want lock only", names)
	}
	if fi, err := os.Stat(names[0]); err != nil || fi.Mode().Perm() != 0o644 || fi.Sys().(*syscall.Stat_t).Nlink != 1 {
		t.Fatalf("lock: %v, %v; want mode 0644 and one link", fi.Mode(), err)
	}
}

// GetMax checks the size fstat reports before reading: a sparse 6 GiB file
// (issue 12 item 7: the file store had no bound and read whole files) is
// refused at once, by GetMax and by Get's 5 GiB bound alike.
func TestFileStoreGetMaxHugeFile(t *testing.T) {
	dir := t.TempDir()
	s := openFile(t, dir)
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(dir, "huge"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "huge"), 6<<30); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := s.GetMax(ctx, "huge", 4<<20); !errors.Is(err, store.ErrObjectTooLarge) ||
		!strings.Contains(err.Error(), "6442450944") || !strings.Contains(err.Error(), "4194304") {
		t.Fatalf("GetMax of 6 GiB with a 4 MiB bound = %v, want ErrObjectTooLarge naming size and bound", err)
	}
	if _, err := s.Get(ctx, "huge"); !errors.Is(err, store.ErrObjectTooLarge) {
		t.Fatalf("Get of 6 GiB = %v, want ErrObjectTooLarge (5 GiB bound)", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("refusing took %v: the file was read", d)
	}
}
