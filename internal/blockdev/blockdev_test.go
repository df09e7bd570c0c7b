package blockdev

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chainvol/chainvol/internal/testutil"
)

// TestLoopAndPartitions: a real loop device attached (with -P) to an image
// with two partitions is found by the image's file info, under its own
// device number, and its partitions are those sysfs shows; an unattached
// file has no loop device.
func TestLoopAndPartitions(t *testing.T) {
	testutil.RequireRoot(t)
	img := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 64<<20); err != nil {
		t.Fatal(err)
	}
	writeMBR(t, img, [][2]uint32{{2048, 32768}, {34816, 32768}}) // two 16 MiB partitions
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
		t.Fatalf("loops %v, want %s as %d:%d", loops, dev, num>>8, num&0xff)
	}
	if n, err := Number(filepath.Join(Dir(num), "dev")); err != nil || n != num {
		t.Fatalf("Number of %s: %d, %v; want %d", Dir(num), n, err, num)
	}
	// Some kernels (in containers) scan no partitions of loop devices:
	// then sysfs has none and neither must Partitions.
	want := 0
	for _, p := range []string{"p1", "p2"} {
		if _, err := os.Stat(filepath.Join(Dir(num), filepath.Base(dev)+p, "partition")); err == nil {
			want++
		}
	}
	parts := Partitions(num)
	if len(parts) != want || want == 2 && (!containsValue(parts, dev+"p1") || !containsValue(parts, dev+"p2")) {
		t.Fatalf("partitions %v, want the %d of sysfs (%sp1, %sp2)", parts, want, dev, dev)
	}
	if want == 0 {
		t.Logf("this kernel shows no partitions of %s: Partitions checked against none", dev)
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

// writeMBR writes an MBR partition table of Linux partitions, each {first
// sector, sectors} in 512-byte sectors, at the start of img.
func writeMBR(t *testing.T, img string, parts [][2]uint32) {
	t.Helper()
	mbr := make([]byte, 512)
	for i, p := range parts {
		e := mbr[446+16*i:]
		e[4] = 0x83 // Linux
		binary.LittleEndian.PutUint32(e[8:], p[0])
		binary.LittleEndian.PutUint32(e[12:], p[1])
	}
	mbr[510], mbr[511] = 0x55, 0xAA
	f, err := os.OpenFile(img, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(mbr, 0); err != nil {
		t.Fatal(err)
	}
}
