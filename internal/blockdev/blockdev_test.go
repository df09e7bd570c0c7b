package blockdev

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chainvol/chainvol/internal/testutil"
)

// TestLoopAndPartitions: a real loop device attached (with -P) to an image
// with two partitions is found by the image's file info, under its own
// device number, and its two partitions are listed; an unattached file
// has no loop device.
func TestLoopAndPartitions(t *testing.T) {
	testutil.RequireRoot(t)
	img := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 64<<20); err != nil {
		t.Fatal(err)
	}
	testutil.WriteMBR(t, img, testutil.Partition{Start: 2048, Sectors: 32768}, testutil.Partition{Start: 34816, Sectors: 32768})
	fi, err := os.Stat(img)
	if err != nil {
		t.Fatal(err)
	}
	if got := LoopsBackedBy(fi); len(got) != 0 {
		t.Fatalf("unattached image: loops %v", got)
	}
	dev := testutil.Run(t, "losetup", "--find", "--show", "-P", img)
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", dev).Run() })
	loops := LoopsBackedBy(fi)
	dfi, err := os.Stat(dev)
	if err != nil {
		t.Fatal(err)
	}
	num := Rdev(dfi)
	if len(loops) != 1 || loops[num] != dev {
		t.Fatalf("loops %v, want %s as device %d", loops, dev, num)
	}
	if n, err := Number(filepath.Join(Dir(num), "dev")); err != nil || n != num {
		t.Fatalf("Number of %s: %d, %v; want %d", Dir(num), n, err, num)
	}
	if _, err := os.Stat(filepath.Join(Dir(num), filepath.Base(dev)+"p1")); err != nil {
		// A kernel without the DOS partition parser: add them by hand (BLKPG).
		testutil.Run(t, "partx", "-a", dev)
	}
	parts := Partitions(num)
	if len(parts) != 2 || !containsValue(parts, dev+"p1") || !containsValue(parts, dev+"p2") {
		t.Fatalf("partitions %v, want %sp1 and %sp2", parts, dev, dev)
	}
	if Rdev(fi) != 0 {
		t.Fatalf("a regular file has device number %d", Rdev(fi))
	}
	if _, err := Number(img); err == nil {
		t.Fatal("Number of a file that is not MAJ:MIN must fail")
	}
}

func containsValue(m map[uint64]string, v string) bool {
	for _, x := range m {
		if x == v {
			return true
		}
	}
	return false
}
