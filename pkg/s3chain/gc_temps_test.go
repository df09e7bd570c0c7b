package s3chain_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// killedTemp leaves in dir what a file-store writer killed before its
// rename leaves: `NAME~tmpNNN` (os.CreateTemp, as the file store makes
// it) of n bytes, last written age ago.
func killedTemp(t *testing.T, dir, name string, n int, age time.Duration) string {
	t.Helper()
	f, err := os.CreateTemp(dir, name+"~tmp*")
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

// TestGCFreesKilledWritersTemps: the temporary file a killed writer left
// in a file target is deleted by a gc of every chain once older than
// max(MinAge, MinTempAge), and counted; a dry run only counts it, a gc of
// one chain and a younger file leave it, and no object is touched.
func TestGCFreesKilledWritersTemps(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	root := filepath.Join(dir, "repo")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, "file://"+root, store.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	repo := newRepo(t, st, testKey(3))
	vol := newTestVolume(t, dir, 1<<20, chainBS, 5)
	if _, _, err := repo.Backup(ctx, s3chain.BackupOptions{Chain: "lab/temps", Source: vol.path, BlockSize: chainBS}); err != nil {
		t.Fatal(err)
	}
	keys := func() (ks []string) {
		if err := st.List(ctx, "", func(oi store.ObjectInfo) error { ks = append(ks, oi.Key); return nil }); err != nil {
			t.Fatal(err)
		}
		return ks
	}
	objects := keys()
	i := slices.IndexFunc(objects, func(k string) bool { return strings.HasPrefix(k, "blocks/") })
	if i < 0 {
		t.Fatalf("no block stored: %q", objects)
	}
	block := filepath.Join(root, filepath.FromSlash(objects[i]))
	killed := killedTemp(t, filepath.Dir(block), filepath.Base(block), 1000, 2*time.Hour)
	young := killedTemp(t, filepath.Dir(block), filepath.Base(block), 10, 30*time.Minute)

	for _, c := range []struct {
		name  string
		o     s3chain.GCOptions
		files int
	}{
		{"one chain", s3chain.GCOptions{Chain: "lab/temps"}, 0},
		{"dry run", s3chain.GCOptions{DryRun: true}, 1},
		{"min-age past the file's age", s3chain.GCOptions{MinAge: 3 * time.Hour}, 0},
	} {
		gs, err := repo.GC(ctx, c.o)
		if err != nil || gs.TempFiles != c.files || gs.TempBytes != int64(1000*c.files) {
			t.Fatalf("%s: gc = %+v, %v; want %d temporary files", c.name, gs, err, c.files)
		}
		if _, err := os.Stat(killed); err != nil {
			t.Fatalf("%s: the killed writer's file is gone: %v", c.name, err)
		}
	}
	// --min-age 0: the grace is still MinTempAge, which the file is past.
	gs, err := repo.GC(ctx, s3chain.GCOptions{})
	if err != nil || gs.TempFiles != 1 || gs.TempBytes != 1000 || gs.DeletedBlocks != 0 {
		t.Fatalf("gc = %+v, %v; want 1 temporary file of 1000 bytes and no block", gs, err)
	}
	if _, err := os.Stat(killed); !os.IsNotExist(err) {
		t.Fatalf("the killed writer's file is left: %v", err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Fatalf("a temporary file younger than MinTempAge is gone: %v", err)
	}
	if got := keys(); !slices.Equal(got, objects) {
		t.Fatalf("objects after gc %q, before %q", got, objects)
	}
}
