package lazy_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/lazy"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// s3Proxy forwards to versitygw and counts what crosses it; down makes it
// cut every connection (an outage of the target).
type s3Proxy struct {
	addr      string
	down      atomic.Bool
	blockGets atomic.Int64
	writes    atomic.Int64 // PUT, POST, DELETE: a browse must make none
}

func startProxy(t testing.TB, backend string) *s3Proxy {
	p := &s3Proxy{}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: backend})
	rp.ErrorLog = log.New(io.Discard, "", 0)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = l.Addr().String()
	srv := &http.Server{ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.down.Load() {
			panic(http.ErrAbortHandler) // the connection is cut
		}
		switch {
		case r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blocks/"):
			p.blockGets.Add(1)
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			p.writes.Add(1)
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return p
}

// backup is one filesystem image backed up to versitygw.
type backup struct {
	srv    testutil.S3Server
	proxy  *s3Proxy
	repo   *s3chain.Repo // through the proxy
	fsType string
	id     string
	sums   map[string]string // relative path -> sha256 of the source files
	data   map[string][]byte // relative path -> bytes of the source files
	dir    string
}

const chain = "lab/browse"

// newBackup makes a 320 MiB image of fsType holding a few files of random
// bytes (one of 1 MiB), backs it up with 1 MiB blocks and returns it.
func newBackup(t *testing.T, fsType string) *backup { return newBackupSized(t, fsType, 320<<20, 0) }

// newBackupSized is newBackup with an image of size bytes and, when fill
// is positive, one more file "big" of fill random bytes.
func newBackupSized(t testing.TB, fsType string, size int64, fill int) *backup {
	testutil.RequireFUSE(t)
	ctx := context.Background()
	b := &backup{srv: testutil.StartS3(t), fsType: fsType, dir: t.TempDir(), sums: map[string]string{}, data: map[string][]byte{}}
	img := filepath.Join(b.dir, "src.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fsType == "xfs" {
		testutil.Run(t, "mkfs.xfs", "-q", "-f", img)
	} else {
		testutil.Run(t, "mkfs.ext4", "-q", "-F", img)
	}
	mnt := filepath.Join(b.dir, "src")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.Run(t, "mount", "-o", "loop", img, mnt)
	files := map[string]int{"one-mib": 1 << 20, "sub/three": 3<<20 + 17, "sub/deep/small": 700, "empty": 0}
	if fill > 0 {
		files["big"] = fill
	}
	for name, size := range files {
		p := filepath.Join(mnt, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data := make([]byte, size)
		_, _ = rand.Read(data)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		b.sums[name] = hex.EncodeToString(sum[:])
		b.data[name] = data
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(mnt, "link")); err != nil {
		t.Fatal(err)
	}
	testutil.Run(t, "umount", mnt)

	creds := store.Credentials{AccessKeyID: b.srv.AccessKey, SecretAccessKey: b.srv.SecretKey}
	direct, err := store.Open(ctx, b.srv.URL("t"), creds)
	if err != nil {
		t.Fatal(err)
	}
	wr, err := s3chain.NewRepo(direct, s3chain.RepoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := wr.Backup(ctx, s3chain.BackupOptions{Chain: chain, Source: img, BlockSize: 1 << 20, FSType: fsType, VolumeMode: "Filesystem"})
	if err != nil {
		t.Fatal(err)
	}
	b.id = m.ID
	b.proxy = startProxy(t, b.srv.Endpoint)
	viaProxy := b.srv
	viaProxy.Endpoint = b.proxy.addr
	ps, err := store.Open(ctx, viaProxy.URL("t"), creds)
	if err != nil {
		t.Fatal(err)
	}
	if b.repo, err = s3chain.NewRepo(ps, s3chain.RepoOptions{}); err != nil {
		t.Fatal(err)
	}
	return b
}

// browse mounts the backup at a fresh directory; unmounted at the end.
func (b *backup) browse(t testing.TB, retryFor time.Duration) (*lazy.Image, *lazy.Browse) {
	t.Helper()
	ctx := context.Background()
	br, err := b.repo.OpenBlocks(ctx, chain, b.id)
	if err != nil {
		t.Fatal(err)
	}
	im, err := lazy.New(br, lazy.Options{CacheDir: b.dir, RetryFor: retryFor,
		Permanent: func(err error) bool { return errors.Is(err, s3chain.ErrCorruptBlock) }})
	if err != nil {
		t.Fatal(err)
	}
	fuseDir, dir := filepath.Join(b.dir, "fuse"), filepath.Join(b.dir, "mnt")
	for _, d := range []string{fuseDir, dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	bw, err := lazy.OpenBrowse(ctx, im, fuseDir, dir, br.Manifest().FSType)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: mounted in %v, %d of %d data blocks fetched", b.fsType, time.Since(start), im.Stats().FetchedBlocks, im.Stats().DataBlocks)
	t.Cleanup(func() { _ = bw.Close(); _ = im.Close() })
	return im, bw
}

// checkGone fails unless nothing of bw is left: no mount at its
// directories, no loop device over its image.
func checkGone(t *testing.T, bw *lazy.Browse, fuseDir string) {
	t.Helper()
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{bw.Dir, fuseDir} {
		if strings.Contains(string(mi), " "+d+" ") {
			t.Errorf("%s is still mounted", d)
		}
	}
	if out, _ := exec.Command("losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE").Output(); strings.Contains(string(out), fuseDir) || bw.Device != "" && strings.Contains(string(out), bw.Device+" ") {
		t.Errorf("a loop device is left: %s", out)
	}
}

func fileSHA(t testing.TB, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestBrowse (issue 27): a mounted XFS and ext4 backup lists and reads
// its files with the source's sha256, fetching fewer blocks than the image
// holds and writing nothing to the target; the symlink is the backup's own
// (not followed out of it); Close leaves no mount and no loop device.
func TestBrowse(t *testing.T) {
	for _, fsType := range []string{"xfs", "ext4"} {
		t.Run(fsType, func(t *testing.T) {
			b := newBackup(t, fsType)
			im, bw := b.browse(t, 5*time.Second)
			ents, err := os.ReadDir(bw.Dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: root listed (%d entries): %d blocks fetched", fsType, len(ents), im.Stats().FetchedBlocks)
			before := im.Stats().FetchedBlocks
			if got := fileSHA(t, filepath.Join(bw.Dir, "one-mib")); got != b.sums["one-mib"] {
				t.Errorf("one-mib: sha256 %s, want %s", got, b.sums["one-mib"])
			}
			t.Logf("%s: 1 MiB file read: %d more blocks fetched", fsType, im.Stats().FetchedBlocks-before)
			seen := 0
			err = filepath.WalkDir(bw.Dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || !d.Type().IsRegular() {
					return err
				}
				rel, _ := filepath.Rel(bw.Dir, p)
				if got := fileSHA(t, p); got != b.sums[rel] {
					t.Errorf("%s: sha256 %s, want %s", rel, got, b.sums[rel])
				}
				seen++
				return nil
			})
			if err != nil || seen != len(b.sums) {
				t.Fatalf("walk: %v, %d of %d files", err, seen, len(b.sums))
			}
			if l, err := os.Readlink(filepath.Join(bw.Dir, "link")); err != nil || l != "/etc/passwd" {
				t.Errorf("symlink: %q, %v", l, err)
			}
			if err := os.WriteFile(filepath.Join(bw.Dir, "new"), []byte("x"), 0o644); err == nil {
				t.Error("a write to the browsed backup succeeded")
			}
			// The backup's content is the tenant's: its setuid binaries and
			// device nodes must give no one on this host anything.
			var sfs syscall.Statfs_t
			if err := syscall.Statfs(bw.Dir, &sfs); err != nil {
				t.Fatal(err)
			}
			for flag, name := range map[int64]string{unix.ST_NOSUID: "nosuid", unix.ST_NODEV: "nodev", unix.ST_NOEXEC: "noexec", unix.ST_RDONLY: "ro"} {
				if sfs.Flags&flag == 0 {
					t.Errorf("the browse mount lacks %s (statfs flags %#x)", name, sfs.Flags)
				}
			}
			st := im.Stats()
			t.Logf("%s: %+v", fsType, st)
			if st.FetchedBlocks == 0 || st.FetchedBlocks >= st.DataBlocks || st.FetchedBlocks != b.proxy.blockGets.Load() {
				t.Errorf("fetched %d blocks of %d (%d GETs of block objects)", st.FetchedBlocks, st.DataBlocks, b.proxy.blockGets.Load())
			}
			if n := b.proxy.writes.Load(); n != 0 {
				t.Errorf("browsing made %d write requests to the target", n)
			}
			if err := bw.Close(); err != nil {
				t.Fatal(err)
			}
			checkGone(t, bw, filepath.Join(b.dir, "fuse"))
		})
	}
}

// readChecked reads the file rel of the browsed backup and returns the
// read's error; every byte it returned before the error must be the
// source's (never zeros, never wrong bytes).
func (b *backup) readChecked(t *testing.T, bw *lazy.Browse, rel string) error {
	t.Helper()
	f, err := os.Open(filepath.Join(bw.Dir, rel))
	if err != nil {
		return err
	}
	defer f.Close()
	want := b.data[rel]
	got := make([]byte, 0, len(want))
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		got = append(got, buf[:n]...)
		if len(got) > len(want) || string(got) != string(want[:len(got)]) {
			t.Fatalf("%s: a read returned bytes that are not the backup's (at %d..%d)", rel, len(got)-n, len(got))
		}
		if err == io.EOF {
			if len(got) != len(want) {
				t.Fatalf("%s: %d bytes, want %d", rel, len(got), len(want))
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// TestBrowseCorruptBlock: once every block object in the store is
// damaged, a read of a file not fetched yet fails with EIO and never
// returns a wrong byte.
func TestBrowseCorruptBlock(t *testing.T) {
	b := newBackup(t, "ext4")
	im, bw := b.browse(t, 5*time.Second)
	n := 0
	err := filepath.WalkDir(b.srv.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || !strings.Contains(p, "/blocks/") {
			return err
		}
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, _ := f.Stat()
		one := make([]byte, 1)
		if _, err := f.ReadAt(one, fi.Size()/2); err != nil {
			return err
		}
		one[0] ^= 0xff
		n++
		_, err = f.WriteAt(one, fi.Size()/2)
		return err
	})
	if err != nil || n == 0 {
		t.Fatalf("corrupt the block objects: %v (%d objects)", err, n)
	}
	err = b.readChecked(t, bw, "sub/three")
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("read of a corrupt block: %v, want EIO", err)
	}
	if st := im.Stats(); st.Failures == 0 || st.Retries != 0 {
		t.Errorf("stats %+v: want failures and no retry of a corrupt block", st)
	}
}

// TestBrowseOutage: while the target is unreachable a read of an
// unfetched file waits (and retries) and returns the right bytes once the
// target is back; an outage longer than RetryFor (3 s here) fails the read
// with EIO, never zeros; the same file reads right after the outage.
func TestBrowseOutage(t *testing.T) {
	b := newBackup(t, "xfs")
	im, bw := b.browse(t, 3*time.Second)

	b.proxy.down.Store(true)
	start := time.Now()
	err := b.readChecked(t, bw, "one-mib")
	t.Logf("read in a long outage: %v after %v", err, time.Since(start))
	if !errors.Is(err, syscall.EIO) || time.Since(start) < 3*time.Second || time.Since(start) > 30*time.Second {
		t.Fatalf("read in an outage longer than RetryFor: %v after %v, want EIO after 3 to 30 s", err, time.Since(start))
	}
	b.proxy.down.Store(false)
	if err := b.readChecked(t, bw, "one-mib"); err != nil {
		t.Fatalf("read after the outage: %v", err)
	}

	b.proxy.down.Store(true)
	done := make(chan error, 1)
	go func() { done <- b.readChecked(t, bw, "sub/three") }()
	select {
	case err := <-done:
		t.Fatalf("read returned during the outage: %v", err)
	case <-time.After(1500 * time.Millisecond):
	}
	b.proxy.down.Store(false)
	if err := <-done; err != nil {
		t.Fatalf("read across an outage of 1.5 s: %v", err)
	}
	// The retries of that wait may all be the store's own (6 tries over
	// up to ~8 s) or the image's too: the read waited, and got the bytes.
	if st := im.Stats(); st.Failures == 0 {
		t.Errorf("stats %+v: the long outage failed no read", st)
	}
}
