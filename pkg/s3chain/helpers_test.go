package s3chain_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// testVolume is a regular file standing for a volume, changed by seeded
// random writes and snapshotted by reflink (or plain) copies.
type testVolume struct {
	t    testing.TB
	path string
	size int64
	bs   int64
	rng  *rand.Rand
}

// newTestVolume creates a sparse file of size bytes at dir/vol with data
// in about half of it (random bytes, and some written zeros), holes in the
// rest.
func newTestVolume(t testing.TB, dir string, size, bs int64, seed uint64) *testVolume {
	v := &testVolume{t: t, path: filepath.Join(dir, "vol"), size: size, bs: bs, rng: rand.New(rand.NewPCG(seed, 7))}
	f, err := os.Create(v.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	for off := int64(0); off < size; off += 4 * bs {
		v.writeAt(f, off, min(2*bs, size-off), false)
		if off+3*bs < size {
			v.writeAt(f, off+3*bs, bs/2, true) // written zeros, not a hole
		}
	}
	return v
}

func (v *testVolume) writeAt(f *os.File, off, n int64, zero bool) {
	buf := make([]byte, n)
	if !zero {
		for i := range buf {
			buf[i] = byte(v.rng.Uint32())
		}
	}
	if _, err := f.WriteAt(buf, off); err != nil {
		v.t.Fatal(err)
	}
}

// change makes k random writes of up to maxLen bytes (one in four writes
// zeros) and returns the set of blocks they touched.
func (v *testVolume) change(k int, maxLen int64) map[int64]bool {
	f, err := os.OpenFile(v.path, os.O_RDWR, 0)
	if err != nil {
		v.t.Fatal(err)
	}
	defer f.Close()
	touched := map[int64]bool{}
	for range k {
		n := 1 + v.rng.Int64N(maxLen)
		off := v.rng.Int64N(v.size - n)
		v.writeAt(f, off, n, v.rng.IntN(4) == 0)
		for b := off / v.bs; b <= (off+n-1)/v.bs; b++ {
			touched[b] = true
		}
	}
	if err := f.Sync(); err != nil {
		v.t.Fatal(err)
	}
	return touched
}

// snapshot copies the volume to dst: a reflink clone (FICLONE) when reflink
// is set, else a byte copy.
func (v *testVolume) snapshot(dst string, reflink bool) {
	src, err := os.Open(v.path)
	if err != nil {
		v.t.Fatal(err)
	}
	defer src.Close()
	out, err := os.Create(dst)
	if err != nil {
		v.t.Fatal(err)
	}
	defer out.Close()
	if reflink {
		if err := unix.IoctlFileClone(int(out.Fd()), int(src.Fd())); err != nil {
			v.t.Fatalf("FICLONE %s: %v", dst, err)
		}
		return
	}
	if _, err := io.Copy(out, src); err != nil {
		v.t.Fatal(err)
	}
}

// fileSHA returns the hex SHA-256 of the first size bytes of path.
func fileSHA(t testing.TB, path string, size int64) string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if n, err := io.Copy(h, io.LimitReader(f, size)); err != nil || n != size {
		t.Fatalf("read %s: %d of %d bytes: %v", path, n, size, err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func newRepo(t testing.TB, st store.Store, key []byte) *s3chain.Repo {
	r, err := s3chain.NewRepo(st, s3chain.RepoOptions{EncryptionKey: key})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func testKey(b byte) []byte {
	k := make([]byte, 32)
	for i := range k {
		k[i] = b + byte(i)
	}
	return k
}

// restoreSHA restores backup id into a fresh file under dir and returns
// the SHA-256 of its first size bytes; the file is removed afterwards.
func restoreSHA(t testing.TB, r *s3chain.Repo, chain, id, dir string) (string, *s3chain.Manifest, s3chain.RestoreStats) {
	t.Helper()
	dest := filepath.Join(dir, "restore-"+id)
	defer os.Remove(dest)
	m, st, err := r.Restore(context.Background(), s3chain.RestoreOptions{Chain: chain, BackupID: id, Destination: dest})
	if err != nil {
		t.Fatalf("restore %s: %v", id, err)
	}
	return fileSHA(t, dest, m.SizeBytes), m, st
}
