package cli

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chainvol/chainvol/internal/testutil"
)

const (
	imageSize = 64 << 20
	blockSize = 1 << 20 // small blocks: more of them, quick to corrupt one
)

// makeImage writes a real ext4 filesystem holding random files into a
// sparse image file (mkfs.ext4 -d needs no mount, hence no root).
func makeImage(t testing.TB, dir string) string { return makeFSImage(t, dir, "ext4", imageSize, nil) }

// makeFSImage writes a filesystem of fsType ("ext4" or "xfs") of size
// bytes into the sparse image file dir/disk.img, whose path it returns,
// holding the tree dir/content: sub/filea..filed (3 MiB, 5 MiB, 700 KiB
// and 1 byte of random bytes), then what extra (if not nil) adds to it.
// ext4 is filled by mkfs.ext4 -d (no mount, no root); XFS, whose mkfs
// here (xfsprogs 6.1) copies no directory, through a loop mount (root;
// at least 300 MiB, mkfs.xfs's minimum).
func makeFSImage(t testing.TB, dir, fsType string, size int64, extra func(t testing.TB, src string)) string {
	t.Helper()
	src := filepath.Join(dir, "content")
	if err := os.MkdirAll(filepath.Join(src, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, size := range []int{3 << 20, 5 << 20, 700 << 10, 1} {
		writeRandom(t, filepath.Join(src, "sub", "file"+string(rune('a'+i))), 0, size)
	}
	if extra != nil {
		extra(t, src)
	}
	img := filepath.Join(dir, "disk.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	switch fsType {
	case "ext4":
		testutil.Run(t, "mkfs.ext4", "-q", "-F", "-d", src, img)
	case "xfs":
		testutil.RequireRoot(t)
		testutil.Run(t, "mkfs.xfs", "-q", "-f", img)
		mnt := filepath.Join(dir, "fill")
		if err := os.Mkdir(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		testutil.Run(t, "mount", "-o", "loop", img, mnt)
		t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() }) // if cp fails
		testutil.Run(t, "cp", "-a", src+"/.", mnt)
		testutil.Run(t, "umount", mnt)
	default:
		t.Fatalf("makeFSImage: fsType %q", fsType)
	}
	return img
}

// writeRandom writes n random bytes at off (creating the file).
func writeRandom(t testing.TB, path string, off int64, n int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := rand.Read(buf); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(buf, off); err != nil {
		t.Fatal(err)
	}
}

func sha(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// blockFiles lists the block objects of a file target.
func blockFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(filepath.Join(root, "blocks"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
