package cli

import (
	"bytes"
	"io"
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

	"github.com/chainvol/chainvol/internal/testutil"
)

// slowBlocks forwards S3 requests to a server and holds every GET of a
// block object for delay (every PUT for putDelay), so that a restore (a
// backup) lasts long enough to be interrupted. The Host header passes unchanged (SigV4 stays valid).
type slowBlocks struct {
	addr     string
	delay    atomic.Int64 // nanoseconds
	putDelay atomic.Int64 // nanoseconds, for PUTs of block objects (slow backups)
	delDelay atomic.Int64 // nanoseconds, for DELETEs of block objects (slow gcs)
}

func startSlowBlocks(t testing.TB, backend string) *slowBlocks {
	t.Helper()
	p := &slowBlocks{}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: backend})
	rp.ErrorLog = log.New(io.Discard, "", 0) // an interrupted client cuts requests
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = l.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blocks/") {
			time.Sleep(time.Duration(p.delay.Load()))
		}
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/blocks/") {
			time.Sleep(time.Duration(p.putDelay.Load()))
		}
		if r.Method == http.MethodDelete && strings.Contains(r.URL.Path, "/blocks/") {
			time.Sleep(time.Duration(p.delDelay.Load()))
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return p
}

// restoreEnv is a backup of an ext4 image on a real S3 server, reached
// by chainvolctl through a slowBlocks proxy.
type restoreEnv struct {
	c     *ctl
	g     []string // global flags
	dir   string
	img   string // the image backed up
	sum   string // its sha256
	proxy *slowBlocks
}

func newRestoreEnv(t testing.TB) *restoreEnv { return newRestoreEnvOf(t, makeImage) }

// newRestoreEnvOf is newRestoreEnv with the image that mkImage writes
// under the directory it is given (and returns the path of).
func newRestoreEnvOf(t testing.TB, mkImage func(t testing.TB, dir string) string) *restoreEnv {
	srv := testutil.StartS3(t)
	proxy := startSlowBlocks(t, srv.Endpoint)
	srv.Endpoint = proxy.addr
	e := &restoreEnv{dir: t.TempDir(), proxy: proxy}
	e.c = &ctl{t: t, secrets: []string{srv.SecretKey}, env: []string{"CHAINVOL_TARGETS=s3=" + srv.URL("chainvol"),
		"CHAINVOL_ACCESS_KEY_ID=" + srv.AccessKey, "CHAINVOL_SECRET_ACCESS_KEY=" + srv.SecretKey}}
	e.g = []string{"--state-dir", filepath.Join(e.dir, "state")}
	e.img = mkImage(t, e.dir)
	e.sum = sha(t, e.img)
	e.c.ok(e.args("backup", "create", "--from", e.img, "--chain", "s3:lab/x", "--block-size", "1048576")...)
	return e
}

func (e *restoreEnv) args(a ...string) []string { return append(append([]string{}, e.g...), a...) }

// interrupted starts "restore s3:lab/x@latest --to to" with slow block
// GETs, sends it SIGINT once checkpoint exists, and wants exit code 1
// with the checkpoint kept; it returns the restore's stderr.
func (e *restoreEnv) interrupted(t *testing.T, checkpoint string, to string, extra ...string) string {
	t.Helper()
	e.proxy.delay.Store(int64(400 * time.Millisecond))
	defer e.proxy.delay.Store(0)
	cmd := exec.Command(binary, e.args(append([]string{"restore", "s3:lab/x@latest", "--to", to, "--workers", "1"}, extra...)...)...)
	cmd.Env = append(os.Environ(), e.c.env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(checkpoint); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no checkpoint %s after 30 s: %s", checkpoint, stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("interrupted restore: %v, want exit code 1; stderr: %s", err, stderr.String())
	}
	if _, err := os.Stat(checkpoint); err != nil {
		t.Fatalf("the interrupted restore left no checkpoint: %v", err)
	}
	if e := stderr.String(); !strings.Contains(e, "interrupted (interrupt signal received)") || strings.Contains(e, "context canceled") {
		t.Fatalf("an interrupted restore should say so, not \"context canceled\": %s", e)
	}
	return stderr.String()
}

// restored runs the restore to the end and checks the bytes of to; it
// returns the blocks it skipped as already restored.
func (e *restoreEnv) restored(t *testing.T, to string, extra ...string) int {
	t.Helper()
	out := e.c.ok(e.args(append([]string{"restore", "s3:lab/x@latest", "--to", to, "-o", "json"}, extra...)...)...)
	res := decode[struct {
		SkippedBlocks int `json:"skippedBlocks"`
	}](t, out)
	if got := shaN(t, to, imageSize); got != e.sum {
		t.Fatalf("restore onto %s: sha256 %s, want %s (%d blocks skipped)", to, got, e.sum, res.SkippedBlocks)
	}
	return res.SkippedBlocks
}

// TestRestoreResumeOnlyOntoSameFile (issue 13 case 1): an interrupted
// restore onto out.img resumes onto the same file, skipping blocks; onto a
// file made anew after "rm out.img" it skips nothing and writes the
// backup's bytes (it used to report success over 204 MiB of zeros).
func TestRestoreResumeOnlyOntoSameFile(t *testing.T) {
	e := newRestoreEnv(t)
	out := filepath.Join(e.dir, "out.img")
	e.interrupted(t, out+".partial.chainvol-checkpoint", out) // a new file: written as out.img.partial
	if n := e.restored(t, out); n == 0 {
		t.Errorf("resume onto the same file skipped nothing")
	}

	e.interrupted(t, out+".chainvol-checkpoint", out, "--force")
	if err := os.Remove(out); err != nil {
		t.Fatal(err)
	}
	if n := e.restored(t, out); n != 0 {
		t.Errorf("restore onto a recreated out.img skipped %d blocks", n)
	}
}

// TestRestoreResumeOnlyOntoSameDisk (issue 13 case 1): after an
// interrupted restore onto /dev/loopN another blank image is attached at
// /dev/loopN. Without --force the command refuses to overwrite it (the
// checkpoint is not its own); with --force it skips nothing and writes the
// backup's bytes (it used to skip 300 MiB on the new disk).
func TestRestoreResumeOnlyOntoSameDisk(t *testing.T) {
	testutil.RequireRoot(t)
	e := newRestoreEnv(t)
	dev := attach(t, blank(t, filepath.Join(e.dir, "a.img")))
	ckpt := filepath.Join(e.dir, "state", "checkpoints", filepath.Base(dev)+".checkpoint")
	e.interrupted(t, ckpt, dev, "--force")
	testutil.Run(t, "losetup", "-d", dev)
	testutil.Run(t, "losetup", dev, blank(t, filepath.Join(e.dir, "b.img")))

	if msg := e.c.fails(2, e.args("restore", "s3:lab/x@latest", "--to", dev)...); !strings.Contains(msg, "--force") {
		t.Errorf("restore onto another disk without --force: %s", msg)
	}
	if n := e.restored(t, dev, "--force"); n != 0 {
		t.Errorf("restore onto another disk at %s skipped %d blocks", dev, n)
	}
}

// TestRestoreRefusesMountedDevice (issue 13 case 2): a restore onto a
// loop device whose ext4 is mounted fails even with --force, naming the
// mount point, and leaves the device's bytes as they were (it used to
// write 1.5 GiB under the mounted filesystem).
func TestRestoreRefusesMountedDevice(t *testing.T) {
	testutil.RequireRoot(t)
	e := newRestoreEnv(t)
	dev := attach(t, blank(t, filepath.Join(e.dir, "a.img")))
	testutil.Run(t, "mkfs.ext4", "-q", "-F", dev)
	mnt := filepath.Join(e.dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	// Read-only: a read-write ext4 changes its own device now and then
	// (superblock write times, lazy inode-table init), which made the
	// byte comparison below fail without any restore writing.
	testutil.Run(t, "mount", "-o", "ro", dev, mnt)
	t.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })
	before := shaN(t, dev, imageSize)
	msg := e.c.fails(1, e.args("restore", "s3:lab/x@latest", "--to", dev, "--force")...)
	if !strings.Contains(msg, mnt) || !strings.Contains(msg, "mounted") {
		t.Errorf("restore onto a mounted device: %s; want it to name %s", msg, mnt)
	}
	if after := shaN(t, dev, imageSize); after != before {
		t.Errorf("restore onto a mounted device changed its bytes")
	}
}

// blank creates a sparse file of imageSize bytes.
func blank(t *testing.T, path string) string {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, imageSize); err != nil {
		t.Fatal(err)
	}
	return path
}

// attach attaches img to a free loop device, detached at the end.
func attach(t *testing.T, img string) string {
	t.Helper()
	dev := testutil.Run(t, "losetup", "--find", "--show", img)
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", dev).Run() })
	return dev
}

// TestRestoreRefusesFirstWhatForceCannotFix: a restore onto what it refuses
// even with --force (a directory, a device that is mounted) says so at
// once, instead of first advising --force (newcomer run); a failure a
// rerun cannot fix does not say "run again to resume".
func TestRestoreRefusesFirstWhatForceCannotFix(t *testing.T) {
	testutil.RequireRoot(t)
	e := newRestoreEnv(t)
	dir := filepath.Join(e.dir, "a-directory")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	msg := e.c.fails(1, e.args("restore", "s3:lab/x@latest", "--to", dir)...)
	if strings.Contains(msg, "--force") || !strings.Contains(msg, "neither a regular file nor a block device") {
		t.Errorf("restore onto a directory: %s", msg)
	}
	small := filepath.Join(e.dir, "small.img")
	if err := os.WriteFile(small, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	msg = e.c.fails(1, e.args("restore", "s3:lab/x@latest", "--to", small, "--force")...)
	if !strings.Contains(msg, "smaller") && !strings.Contains(msg, "needs") || strings.Contains(msg, "run again") {
		t.Errorf("restore onto a too small file: %s", msg)
	}
}

// TestRestoreNewFileIsPartialUntilComplete (issue 25 item 6.2): a restore
// onto a new file interrupted with SIGINT leaves no file under the final
// name, only NAME.partial and its checkpoint, and says so; the same
// command run again resumes from them (skipping blocks) and renames the
// complete, synced image to NAME. On main the interrupted restore left an
// incomplete image under the final name.
func TestRestoreNewFileIsPartialUntilComplete(t *testing.T) {
	e := newRestoreEnv(t)
	out := filepath.Join(e.dir, "new.img")
	partial := out + ".partial"
	ckpt := partial + ".chainvol-checkpoint"
	msg := e.interrupted(t, ckpt, out)
	t.Logf("interrupted: %s", msg)
	if _, err := os.Lstat(out); !os.IsNotExist(err) {
		t.Fatalf("an interrupted restore left %s: %v", out, err)
	}
	if _, err := os.Stat(partial); err != nil {
		t.Fatalf("an interrupted restore left no %s: %v", partial, err)
	}
	for _, s := range []string{out + " was not created", partial, "run the same command again to resume"} {
		if !strings.Contains(msg, s) {
			t.Errorf("interrupted restore: %q does not say %q", msg, s)
		}
	}
	if n := e.restored(t, out); n == 0 {
		t.Errorf("the rerun skipped nothing: it did not resume from %s", partial)
	}
	for _, p := range []string{partial, ckpt} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("a complete restore left %s: %v", p, err)
		}
	}
}

// TestRestoreInterruptedDeviceSaysIncomplete (issue 25 item 6.2): an
// interrupted restore onto a device (which cannot be renamed) keeps its
// checkpoint and says the device is incomplete.
func TestRestoreInterruptedDeviceSaysIncomplete(t *testing.T) {
	testutil.RequireRoot(t)
	e := newRestoreEnv(t)
	dev := attach(t, blank(t, filepath.Join(e.dir, "a.img")))
	ckpt := filepath.Join(e.dir, "state", "checkpoints", filepath.Base(dev)+".checkpoint")
	msg := e.interrupted(t, ckpt, dev, "--force")
	t.Logf("interrupted: %s", msg)
	if !strings.Contains(msg, dev+" is incomplete: do not use it") || !strings.Contains(msg, ckpt) {
		t.Errorf("interrupted restore onto %s: %q; want it to say the device is incomplete and name %s", dev, msg, ckpt)
	}
	if n := e.restored(t, dev, "--force"); n == 0 {
		t.Errorf("the rerun onto %s skipped nothing", dev)
	}
}
