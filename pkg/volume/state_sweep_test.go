package volume

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chainvol/chainvol/pkg/backend"
)

// TestSweepState: a new Manager removes the temporary files of writes a
// kill interrupted and the files of lvols that are gone, and keeps the
// files of lvols that exist and files it does not know (lifecycle
// interleavings, seed 412: ".image-*" files stayed forever).
func TestSweepState(t *testing.T) {
	pool := testPool(t)
	lv, err := pool.Create(context.Background(), backend.CreateOptions{Name: "v", Kind: backend.KindVolume, SizeBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	file := func(dir, name string) string {
		p := filepath.Join(state, dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone := []string{
		file("images", ".image-12345"), file("restores", ".image-777"),
		file("restores", "vol-gone.checkpoint.tmp"), file("restores", "vol-gone.checkpoint"),
		file("restores", "vol-gone.base"), file("images", "snap-gone.json"),
		file("images", "."+lv.ID+".json~tmp42"), file("restores", "."+lv.ID+".checkpoint~tmp7"),
	}
	kept := []string{
		file("restores", lv.ID+".checkpoint"), file("restores", lv.ID+".base"),
		file("images", "README"),
	}
	NewManager(pool, Config{StateDir: state, Node: "n"})
	for _, p := range gone {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s left behind", p)
		}
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
}
