package backend

import (
	"context"
	"testing"

	"github.com/chainvol/chainvol/internal/testutil"
)

// TestPoolXFS runs the suite on a real reflink XFS (root: loop device),
// where clones and snapshots must be reflinks.
func TestPoolXFS(t *testing.T) {
	mnt := testutil.LoopFS(t, "xfs", 2<<30)
	if p := openPool(t, t.TempDir()); p.Reflink() {
		t.Log("note: the temp dir filesystem supports reflink too")
	}
	if p := openPool(t, mnt); !p.Reflink() {
		t.Fatal("Reflink() = false on an XFS with reflink=1")
	}
	t.Run("reflink", func(t *testing.T) { runSuite(t, mnt) })
	t.Run("copy", func(t *testing.T) { runSuite(t, mnt, WithoutReflink()) })
}

// TestXFSLargeSparseClone clones a 1 GiB lvol holding 48 MiB of random data
// in three regions and checks every byte of snapshot and clone by sha256.
func TestXFSLargeSparseClone(t *testing.T) {
	mnt := testutil.LoopFS(t, "xfs", 2<<30)
	p := openPool(t, mnt)
	const size = 1 << 30
	v := mustCreate(t, p, CreateOptions{Name: "big", Kind: KindVolume, SizeBytes: size})
	vPath, _ := p.DataPath(v.ID)
	for _, off := range []int64{0, 400<<20 + 4096*3, size - 16<<20} {
		writeRandom(t, vPath, off, 16<<20)
	}
	sha := fileSHA(t, vPath, -1)
	s := mustCreate(t, p, CreateOptions{Name: "big", Kind: KindSnapshot, SourceID: v.ID})
	c := mustCreate(t, p, CreateOptions{Name: "big-clone", Kind: KindVolume, SourceID: s.ID, SizeBytes: size + 1<<20})
	sPath, _ := p.DataPath(s.ID)
	cPath, _ := p.DataPath(c.ID)
	if got := fileSHA(t, sPath, -1); got != sha {
		t.Fatalf("snapshot sha256 %s, source %s", got, sha)
	}
	if got := fileSHA(t, cPath, size); got != sha {
		t.Fatalf("clone sha256 %s, source %s", got, sha)
	}
	// Reflinks share blocks: three 1 GiB files with 48 MiB of data fit
	// in far less than 3 x 48 MiB of new space.
	if c, err := p.Capacity(context.Background()); err != nil || c.TotalBytes-c.AvailableBytes > 120<<20 {
		t.Fatalf("pool uses %d bytes for 48 MiB of shared data (%v)", c.TotalBytes-c.AvailableBytes, err)
	}
}
