package store_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// killedWrite leaves what a writer of key killed before its rename or
// link leaves: a temporary file beside the key, of n bytes, its mtime age
// ago.
func killedWrite(t *testing.T, dir, key string, n int, age time.Duration) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := store.CreateTempForTest(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	mt := time.Now().Add(-age)
	if err := os.Chtimes(f.Name(), mt, mt); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

func listKeys(t *testing.T, s store.Store) []string {
	t.Helper()
	var keys []string
	if err := s.List(context.Background(), "", func(oi store.ObjectInfo) error {
		keys = append(keys, oi.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// TestFileSweepTemps: the temporary files of killed writers are invisible
// to List; SweepTemps counts them in a dry run, then removes those past
// the grace (and the directories that leaves empty) and keeps young ones,
// objects (however old) and strangers.
func TestFileSweepTemps(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openFile(t, dir)
	for _, k := range []string{"blocks/a/00/obj", "chains/c.json"} {
		if err := s.Put(ctx, k, []byte("data of "+k)); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-48 * time.Hour) // an old object is still an object
		os.Chtimes(filepath.Join(dir, filepath.FromSlash(k)), old, old)
	}
	oldSame := killedWrite(t, dir, "blocks/a/00/obj", 100, 2*time.Hour)   // beside its object
	oldAlone := killedWrite(t, dir, "blocks/a/ff/new", 1000, 3*time.Hour) // alone in its directory
	young := killedWrite(t, dir, "chains/d.json", 10, time.Minute)
	stranger := filepath.Join(dir, "chains", "notes~tmp")
	if err := os.WriteFile(stranger, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(stranger, time.Unix(0, 0), time.Unix(0, 0))
	want := []string{"blocks/a/00/obj", "chains/c.json"}
	if got := listKeys(t, s); !slices.Equal(got, want) {
		t.Fatalf("List = %q, want only the objects %q", got, want)
	}

	if files, n, err := store.SweepTemps(ctx, s, time.Hour, true); err != nil || files != 2 || n != 1100 {
		t.Fatalf("dry run = %d files, %d bytes, %v; want 2, 1100, nil", files, n, err)
	}
	if !exists(oldSame) || !exists(oldAlone) {
		t.Fatal("a dry run removed a temporary file")
	}
	if files, n, err := store.SweepTemps(ctx, s, time.Hour, false); err != nil || files != 2 || n != 1100 {
		t.Fatalf("sweep = %d files, %d bytes, %v; want 2, 1100, nil", files, n, err)
	}
	if exists(oldSame) || exists(oldAlone) || exists(filepath.Dir(oldAlone)) {
		t.Fatal("an old temporary file, or the directory it emptied, is left")
	}
	if !exists(young) || !exists(stranger) {
		t.Fatal("the sweep removed a young temporary file or a file not of the store")
	}
	for _, k := range want {
		if got, err := s.Get(ctx, k); err != nil || string(got) != "data of "+k {
			t.Fatalf("object %s after the sweep: %q, %v", k, got, err)
		}
	}
	if files, _, err := store.SweepTemps(ctx, s, time.Hour, false); err != nil || files != 0 {
		t.Fatalf("second sweep = %d files, %v; want 0, nil", files, err)
	}
}

// TestSweepTempsThroughWrappers: the retry and faulty wrappers pass the
// capability to the file store; a store without it sweeps nothing.
func TestSweepTempsThroughWrappers(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	old := killedWrite(t, dir, "blocks/x", 5, 2*time.Hour)
	wrapped := storetest.NewFaulty(store.NewRetryStore(openFile(t, dir), store.RetryPolicy{}))
	if _, ok := any(wrapped).(store.TempSweeper); !ok {
		t.Fatal("Faulty is no TempSweeper")
	}
	if files, n, err := store.SweepTemps(ctx, wrapped, time.Hour, false); err != nil || files != 1 || n != 5 || exists(old) {
		t.Fatalf("sweep through wrappers = %d files, %d bytes, %v (file left: %v); want 1, 5, nil", files, n, err, exists(old))
	}
	if files, n, err := store.SweepTemps(ctx, storetest.NewMem(), 0, false); err != nil || files != 0 || n != 0 {
		t.Fatalf("sweep of a memory store = %d, %d, %v; want 0, 0, nil", files, n, err)
	}
}
