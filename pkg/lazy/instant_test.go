package lazy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/lazy"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

// instant is a backup staged as an instant restore stages it: a sparse
// data file, the writable image over it, the FUSE file, a read-write loop
// device over that.
type instant struct {
	im        *lazy.Image
	srv       *lazy.Server
	dev       string
	data, rec string
	stagedIn  time.Duration
	cleanedUp bool
}

// stageInstant stages b (see instant); torn down by stop or at the end.
func stageInstant(t testing.TB, b *backup) *instant {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	br, err := b.repo.OpenBlocks(ctx, chain, b.id)
	if err != nil {
		t.Fatal(err)
	}
	in := &instant{data: filepath.Join(b.dir, "lvol.data"), rec: filepath.Join(b.dir, "state", "hydration", "vol.bits")}
	f, err := os.Create(in.data)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(br.SizeBytes()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if in.im, err = lazy.OpenWritable(br, in.data, in.rec, lazy.Options{RetryFor: 20 * time.Second,
		Permanent: func(err error) bool { return errors.Is(err, s3chain.ErrCorruptBlock) }}); err != nil {
		t.Fatal(err)
	}
	fuseDir := filepath.Join(b.dir, "fuse")
	if err := os.MkdirAll(fuseDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if in.srv, err = lazy.ServeWritable(in.im, fuseDir); err != nil {
		t.Fatal(err)
	}
	if in.dev, err = lazy.AttachWritable(ctx, in.srv.Path()); err != nil {
		t.Fatal(err)
	}
	in.stagedIn = time.Since(start)
	t.Cleanup(func() { in.stop(t) })
	return in
}

// stop detaches the loop device, unmounts FUSE and closes the image.
func (in *instant) stop(t testing.TB) {
	if in.cleanedUp {
		return
	}
	in.cleanedUp = true
	if err := lazy.Detach(in.dev); err != nil {
		t.Error(err)
	}
	if err := unmountRetry(in.srv); err != nil {
		t.Error(err)
	}
	if err := in.im.Close(); err != nil {
		t.Error(err)
	}
}

func unmountRetry(srv *lazy.Server) error {
	var err error
	for range 100 {
		if err = srv.Unmount(); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// An instant restore of an XFS and an ext4 backup: the filesystem mounts
// read-write over the FUSE file at once, its files read with the source's
// sha256 while hydration runs, files written and fsynced meanwhile; after
// hydration the data file alone (a plain loop device) holds the backup's
// files and the new ones, every block fetched at most once.
func TestInstantFilesystem(t *testing.T) {
	for _, fsType := range []string{"xfs", "ext4"} {
		t.Run(fsType, func(t *testing.T) {
			b := newBackupSized(t, fsType, 320<<20, 48<<20)
			in := stageInstant(t, b)
			mnt := filepath.Join(b.dir, "mnt")
			if err := os.MkdirAll(mnt, 0o755); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			testutil.Run(t, "mount", "-t", fsType, in.dev, mnt)
			mounted := in.stagedIn + time.Since(start)
			st := in.im.Stats()
			t.Logf("%s: staged in %v, mounted read-write after %v, %d of %d data blocks fetched", fsType, in.stagedIn, mounted, st.FetchedBlocks, st.DataBlocks)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			herr := make(chan error, 1)
			go func() { herr <- in.im.Hydrate(ctx, 4) }()
			for name, sum := range b.sums {
				if got := fileSHA(t, filepath.Join(mnt, name)); got != sum {
					t.Fatalf("%s: sha256 %s during hydration, want %s", name, got, sum)
				}
			}
			fresh := make([]byte, 9<<20+123)
			_, _ = rand.Read(fresh)
			writeSynced(t, filepath.Join(mnt, "fresh"), fresh)
			patch := bytes.Repeat([]byte("patched!"), 1000)
			overwriteSynced(t, filepath.Join(mnt, "sub/three"), patch, 1<<20+5)
			three := bytes.Clone(b.data["sub/three"])
			copy(three[1<<20+5:], patch)
			if err := <-herr; err != nil {
				t.Fatal(err)
			}
			if done, total := in.im.Hydrated(); done != total {
				t.Fatalf("hydrated %d of %d bytes", done, total)
			}
			st = in.im.Stats()
			if st.FetchedBlocks > st.DataBlocks {
				t.Fatalf("%d blocks fetched, the backup has %d data blocks", st.FetchedBlocks, st.DataBlocks)
			}
			testutil.Run(t, "umount", mnt)
			in.stop(t)
			testutil.Run(t, "mount", "-o", "loop", "-t", fsType, in.data, mnt)
			defer testutil.Run(t, "umount", mnt)
			checkFile(t, filepath.Join(mnt, "fresh"), fresh)
			checkFile(t, filepath.Join(mnt, "sub/three"), three)
			for name, sum := range b.sums {
				if name == "sub/three" {
					continue
				}
				if got := fileSHA(t, filepath.Join(mnt, name)); got != sum {
					t.Fatalf("%s: sha256 %s from the hydrated data file, want %s", name, got, sum)
				}
			}
		})
	}
}

// writeSynced writes data to a new file p and fsyncs it.
func writeSynced(t *testing.T, p string, data []byte) {
	t.Helper()
	f, err := os.Create(p)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// overwriteSynced writes data at off into the existing file p and fsyncs.
func overwriteSynced(t *testing.T, p string, data []byte, off int64) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteAt(data, off)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func checkFile(t *testing.T, p string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes differ from the %d written", p, len(got), len(want))
	}
}

// Raw writes to the loop device during hydration (sector-aligned, random,
// some crossing blocks, concurrent with hydration and with each other's
// reads): the hydrated data file is the backup's image plus the writes.
func TestInstantRawWritesDuringHydration(t *testing.T) {
	b := newBackupSized(t, "ext4", 96<<20, 0)
	in := stageInstant(t, b)
	want, err := os.ReadFile(filepath.Join(b.dir, "src.img"))
	if err != nil {
		t.Fatal(err)
	}
	dev, err := os.OpenFile(in.dev, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	herr := make(chan error, 1)
	go func() { herr <- in.im.Hydrate(ctx, 2) }()
	buf := make([]byte, 3<<20)
	for k := range 40 {
		off := randN(int64(len(want))-int64(len(buf))) &^ 511
		n := (1 + randN(int64(len(buf))-1)) &^ 511
		p := buf[:max(n, 512)]
		_, _ = rand.Read(p)
		if _, err := dev.WriteAt(p, off); err != nil {
			t.Fatal(err)
		}
		copy(want[off:], p)
		got := make([]byte, 1<<20)
		roff := randN(int64(len(want))-int64(len(got))) &^ 511
		if _, err := dev.ReadAt(got, roff); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[roff:roff+int64(len(got))]) {
			t.Fatalf("read %d at %d after write %d: bytes other than the backup's and the writes'", len(got), roff, k)
		}
	}
	if err := dev.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := <-herr; err != nil {
		t.Fatal(err)
	}
	dev.Close()
	in.stop(t)
	got, err := os.ReadFile(in.data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the hydrated data file is not the backup plus the writes")
	}
}

// randN is a uniform random int64 in [0, n).
func randN(n int64) int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	v := int64(0)
	for _, c := range b {
		v = v<<8 | int64(c)
	}
	if v < 0 {
		v = -v
	}
	return v % n
}

// An outage of the target during an instant restore: a read of files not
// hydrated waits and returns the backup's bytes (never zeros) once the
// target is back, and hydration completes.
func TestInstantOutage(t *testing.T) {
	b := newBackupSized(t, "ext4", 160<<20, 8<<20)
	in := stageInstant(t, b)
	mnt := filepath.Join(b.dir, "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.Run(t, "mount", "-t", "ext4", in.dev, mnt)
	defer testutil.Run(t, "umount", mnt)
	b.proxy.down.Store(true)
	go func() { time.Sleep(3 * time.Second); b.proxy.down.Store(false) }()
	start := time.Now()
	if got := fileSHA(t, filepath.Join(mnt, "big")); got != b.sums["big"] {
		t.Fatalf("big: sha256 %s after the outage, want %s", got, b.sums["big"])
	}
	if waited := time.Since(start); waited < 2*time.Second {
		t.Fatalf("the read returned after %v, during the outage", waited)
	} else {
		t.Logf("the read waited %v through a 3 s outage", waited)
	}
	if err := in.im.Hydrate(context.Background(), 4); err != nil {
		t.Fatal(err)
	}
}
