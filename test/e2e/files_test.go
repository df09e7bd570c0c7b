package e2e

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// tree maps a file's path relative to the volume root to its sha256.
type tree map[string]string

// writeTree fills dir with a directory tree of random files of various
// sizes (about total bytes) and a few files copied from /usr/share, and
// syncs them.
func writeTree(t *testing.T, dir string, seed uint64, total int64) {
	t.Helper()
	src := newRand(seed)
	rng := rand.New(src)
	sizes := []int64{0, 1, 511, 4096, 10_000, 65_536, 300_000, 1 << 20, 3<<20 + 17}
	var written int64
	for i := 0; written < total; i++ {
		sub := filepath.Join(dir, "d"+string(rune('a'+i%5)), "s"+string(rune('0'+i%3)))
		size := sizes[rng.IntN(len(sizes))]
		writeRandom(t, filepath.Join(sub, "f"+itoa(i)), src, size)
		written += size
	}
	copyShare(t, filepath.Join(dir, "share"), 12)
	syncDir(t, dir)
}

// writeRandom writes size random bytes to path, creating its directory.
func writeRandom(t *testing.T, path string, src *rand.ChaCha8, size int64) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, size)
	_, _ = src.Read(buf)
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyShare copies up to n regular files from /usr/share (real, compressible data).
func copyShare(t *testing.T, dst string, n int) {
	t.Helper()
	count := 0
	_ = filepath.WalkDir("/usr/share/common-licenses", func(p string, d fs.DirEntry, err error) error {
		if err != nil || count >= n || !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, d.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
		count++
		return nil
	})
	if count == 0 {
		t.Fatalf("no files to copy from /usr/share/common-licenses")
	}
}

// changeTree changes about pct percent of the files of dir: overwrites
// some in place, deletes some and adds new ones. It returns the number of
// files changed and the bytes written.
func changeTree(t *testing.T, dir string, seed uint64, pct float64) (int, int64) {
	t.Helper()
	src := newRand(seed)
	rng := rand.New(src)
	files := sortedKeys(hashTree(t, dir))
	n := max(3, int(float64(len(files))*pct/100))
	var written int64
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, files[rng.IntN(len(files))])
		switch i % 3 {
		case 0: // overwrite the first bytes in place
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				if os.IsNotExist(err) {
					continue // deleted earlier in this loop
				}
				t.Fatal(err)
			}
			b := make([]byte, 4096)
			_, _ = src.Read(b)
			if _, err := f.WriteAt(b, 0); err != nil {
				t.Fatal(err)
			}
			f.Close()
			written += int64(len(b))
		case 1:
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		case 2:
			writeRandom(t, filepath.Join(dir, "added", "n"+itoa(i)), src, 100_000)
			written += 100_000
		}
	}
	syncDir(t, dir)
	return n, written
}

// hashTree returns the sha256 of every regular file under dir, skipping
// lost+found.
func hashTree(t *testing.T, dir string) tree {
	t.Helper()
	out := tree{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "lost+found" {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	if err != nil {
		t.Fatalf("hash %s: %v", dir, err)
	}
	return out
}

// sameTree fails the test unless dir holds exactly the files of want.
func sameTree(t *testing.T, what, dir string, want tree) {
	t.Helper()
	got := hashTree(t, dir)
	var diffs []string
	for p, h := range want {
		switch g, ok := got[p]; {
		case !ok:
			diffs = append(diffs, "missing "+p)
		case g != h:
			diffs = append(diffs, "differs "+p)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			diffs = append(diffs, "extra "+p)
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		if len(diffs) > 10 {
			diffs = append(diffs[:10], "...")
		}
		t.Fatalf("%s: %d of %d files differ: %s", what, len(diffs), len(want), strings.Join(diffs, ", "))
	}
	if len(want) == 0 {
		t.Fatalf("%s: empty tree", what)
	}
}

func syncDir(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
}

// newRand is a deterministic random source for seed.
func newRand(seed uint64) *rand.ChaCha8 {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	return rand.NewChaCha8(s)
}

func sortedKeys(m tree) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func itoa(i int) string { return strconv.Itoa(i) }

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
