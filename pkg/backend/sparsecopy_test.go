package backend

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCopyPaths checks both copy paths byte for byte on a file with holes:
// sparseCopy (SEEK_DATA + copy_file_range) and readWriteCopy, the path
// taken where the kernel refuses copy_file_range. It also checks that a
// cancelled context stops a copy.
func TestCopyPaths(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := makeEmpty(src, 9<<20); err != nil {
		t.Fatal(err)
	}
	writeRandom(t, src, 1<<20+7, 3<<20)
	writeRandom(t, src, 9<<20-100, 100)
	want := fileSHA(t, src, -1)
	in, _ := os.Open(src)
	defer in.Close()
	copies := map[string]func(ctx context.Context, out *os.File) error{
		"sparse":    func(ctx context.Context, out *os.File) error { return sparseCopy(ctx, out, in, 9<<20) },
		"readWrite": func(ctx context.Context, out *os.File) error { return readWriteCopy(ctx, out, in, 0, 9<<20) },
	}
	for name, copyFn := range copies {
		out, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := copyFn(context.Background(), out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out.Close()
		if got := fileSHA(t, out.Name(), -1); got != want {
			t.Fatalf("%s copy sha256 %s, want %s", name, got, want)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		out2, _ := os.Create(out.Name() + "-cancelled")
		if err := copyFn(ctx, out2); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s with a cancelled context: %v", name, err)
		}
		out2.Close()
	}
}
