package lazy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/fdkeep"
	"github.com/chainvol/chainvol/pkg/lazy"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// childServerEnv carries a childServer's JSON to this test binary
// re-executed as the FUSE server of an instant restore, so that the test
// can kill it with SIGKILL as a crash of the driver would.
const childServerEnv = "CHAINVOL_LAZY_SERVER"

type childServer struct {
	URL, Access, Secret, Chain, ID string
	Data, Rec, FuseDir             string
	FetchDelay                     time.Duration // slows hydration so that kills land inside it
	Keeper                         string        // a pkg/fdkeep socket: serve a kept connection (ServeKept)
	TakeOver                       bool          // with Keeper: take the kept connection over instead of mounting
}

// TestInstantServerChild is the child half of startServer: it serves the
// writable image and hydrates it, printing "CHILD ready" once the FUSE
// file is there and "CHILD hydrated" when every block is; on SIGTERM it
// unmounts and exits.
func TestInstantServerChild(t *testing.T) {
	raw := os.Getenv(childServerEnv)
	if raw == "" {
		t.Skip("run through startServer")
	}
	var c childServer
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := store.Open(ctx, c.URL, store.Credentials{AccessKeyID: c.Access, SecretAccessKey: c.Secret})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := s3chain.NewRepo(st, s3chain.RepoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	br, err := repo.OpenBlocks(ctx, c.Chain, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	im, err := lazy.OpenWritable(br, c.Data, c.Rec, lazy.Options{OnFetch: func(int64, time.Duration, error) { time.Sleep(c.FetchDelay) }})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveChild(t, c, im)
	done, total := im.Hydrated()
	fmt.Printf("CHILD recorded %d %d\n", done, total)
	fmt.Println("CHILD ready")
	sig := make(chan os.Signal, 1) // before "hydrated", after which SIGTERM comes
	signal.Notify(sig, syscall.SIGTERM)
	if err := im.Hydrate(ctx, 2); err != nil {
		t.Fatal(err)
	}
	fmt.Println("CHILD hydrated")
	<-sig
	if err := unmountRetry(srv); err != nil {
		t.Fatal(err)
	}
	if err := im.Close(); err != nil {
		t.Fatal(err)
	}
}

// serveChild serves im as c says: ServeWritable, ServeKept (giving the
// connection to c.Keeper) or TakeOver of the connection c.Keeper holds.
func serveChild(t *testing.T, c childServer, im *lazy.Image) *lazy.Server {
	ctx := context.Background()
	keeper := fdkeep.Client{Path: c.Keeper}
	switch {
	case c.Keeper == "":
		srv, err := lazy.ServeWritable(im, c.FuseDir)
		if err != nil {
			t.Fatal(err)
		}
		return srv
	case c.TakeOver:
		f, blob, err := keeper.Get(ctx, "vol")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		srv, err := lazy.TakeOver(im, f, blob, c.FuseDir)
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	srv, kept, err := lazy.ServeKept(im, c.FuseDir)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.File.Close()
	if err := keeper.Put(ctx, "vol", int(kept.File.Fd()), kept.Blob); err != nil {
		t.Fatal(err)
	}
	return srv
}

// server is a running childServer process.
type server struct {
	cmd   *exec.Cmd
	lines chan string
}

// newChild is the childServer of b in a new directory: an empty data
// file of size bytes, the FUSE directory (unmounted when the test ends),
// fetches slowed by delay, the connection kept by keeper if not "".
func newChild(t *testing.T, b *backup, size int, delay time.Duration, keeper string) childServer {
	t.Helper()
	dir := t.TempDir()
	c := childServer{URL: b.srv.URL("t"), Access: b.srv.AccessKey, Secret: b.srv.SecretKey, Chain: chain, ID: b.id,
		Data: filepath.Join(dir, "data"), Rec: filepath.Join(dir, "hydration", "vol.bits"), FuseDir: filepath.Join(dir, "fuse"),
		FetchDelay: delay, Keeper: keeper}
	if err := os.Mkdir(c.FuseDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", c.FuseDir).Run() })
	if err := os.WriteFile(c.Data, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(c.Data, int64(size)); err != nil {
		t.Fatal(err)
	}
	return c
}

// startServer starts a childServer process and waits for its "ready".
func startServer(t *testing.T, c childServer) *server {
	t.Helper()
	s := startServerNoWait(t, c)
	s.await(t, "ready")
	return s
}

// startServerNoWait starts a childServer process.
func startServerNoWait(t *testing.T, c childServer) *server {
	t.Helper()
	raw, _ := json.Marshal(c)
	cmd := exec.Command(os.Args[0], "-test.run=^TestInstantServerChild$", "-test.v")
	cmd.Env = append(os.Environ(), childServerEnv+"="+string(raw))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, lines: make(chan string, 100)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "CHILD ") {
				s.lines <- strings.TrimPrefix(l, "CHILD ")
			} else if strings.Contains(l, "FAIL") || strings.Contains(l, ".go:") {
				t.Logf("server: %s", l)
			}
		}
		close(s.lines)
	}()
	return s
}

// await waits for the server's line want (30 s at most).
func (s *server) await(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				t.Fatalf("the server exited before %q", want)
			}
			if l == want {
				return
			}
			if strings.HasPrefix(l, "recorded ") {
				t.Logf("server started with the record marking %s bytes", strings.Replace(strings.TrimPrefix(l, "recorded "), " ", " of ", 1))
			}
		case <-timeout:
			t.Fatalf("no %q from the server in 30 s", want)
		}
	}
}

// kill -9 of the FUSE server during hydration, at a random point of an
// application's writes, fsyncs and reads on the FUSE file: no read ever
// returns bytes other than the backup's and the writes'; the dead
// server's file answers ENOTCONN (rule 6); a restarted server resumes
// from the record, and after its hydration the data file is the backup
// plus every write fsynced before the kill (a write not fsynced may be
// there or not, byte by byte).
func TestInstantKilledServer(t *testing.T) {
	b := newBackupSized(t, "ext4", 96<<20, 40<<20)
	src, err := os.ReadFile(filepath.Join(b.dir, "src.img"))
	if err != nil {
		t.Fatal(err)
	}
	testutil.RunSchedules(t, 3, func(t *testing.T, seed uint64) { runKillSchedule(t, b, src, seed) })
}

// appState is what the application knows of the image.
type appState struct {
	written, flushed []byte // every write that returned; as of the last fsync that returned
	pending          []byte // written with the write in flight at the kill applied, if any
}

func runKillSchedule(t *testing.T, b *backup, src []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 27))
	c := newChild(t, b, len(src), 25*time.Millisecond, "")
	st := &appState{written: bytes.Clone(src), flushed: bytes.Clone(src)}
	srv := startServer(t, c)
	killAt := time.Duration(r.Int64N(int64(1500 * time.Millisecond)))
	ops := runApp(t, r, filepath.Join(c.FuseDir, lazy.ImageName), st, killAt, srv)
	_ = exec.Command("umount", "-l", c.FuseDir).Run()
	t.Logf("killed after %v and %d operations", killAt, ops)

	srv = startServer(t, c)
	f, err := os.Open(filepath.Join(c.FuseDir, lazy.ImageName))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	checkAllowed(t, "read after the restart", got, st)
	srv.await(t, "hydrated")
	_ = srv.cmd.Process.Signal(syscall.SIGTERM)
	if err := srv.cmd.Wait(); err != nil {
		t.Fatalf("server after SIGTERM: %v", err)
	}
	data, err := os.ReadFile(c.Data)
	if err != nil {
		t.Fatal(err)
	}
	checkAllowed(t, "hydrated data file", data, st)
}

// runApp writes, fsyncs and reads the FUSE file image with r's random
// choices until the server dies, which it does by SIGKILL after killAt;
// every read before is checked exact, and after the kill the file answers
// ENOTCONN. It returns the number of operations done.
func runApp(t *testing.T, r *rand.Rand, image string, st *appState, killAt time.Duration, srv *server) int {
	f, err := os.OpenFile(image, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	killed := time.AfterFunc(killAt, func() { _ = srv.cmd.Process.Kill() })
	defer killed.Stop()
	size := int64(len(st.written))
	ops := 0
	for ; ; ops++ {
		off := r.Int64N(size - 1)
		n := 1 + r.Int64N(min(3<<20, size-off))
		var err error
		switch k := r.IntN(10); {
		case k < 4:
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(r.Uint32())
			}
			st.pending = bytes.Clone(st.written)
			copy(st.pending[off:], p)
			if _, err = f.WriteAt(p, off); err == nil {
				st.written, st.pending = st.pending, nil
			}
		case k < 6:
			if err = f.Sync(); err == nil {
				st.flushed = bytes.Clone(st.written)
			}
		default:
			got := make([]byte, n)
			if _, err = f.ReadAt(got, off); err == nil && !bytes.Equal(got, st.written[off:off+n]) {
				t.Fatalf("a read of %d bytes at %d returned bytes other than the backup's and the writes'", n, off)
			}
		}
		if err != nil {
			_ = srv.cmd.Wait()
			// ECONNABORTED: the request the server died in; ENOTCONN: later ones.
			if !errors.Is(err, syscall.ENOTCONN) && !errors.Is(err, syscall.ECONNABORTED) {
				t.Fatalf("I/O of the killed server's file: %v, want ENOTCONN or ECONNABORTED", err)
			}
			return ops
		}
	}
}

// checkAllowed fails unless every byte of got is the flushed state's, the
// written state's or the in-flight write's.
func checkAllowed(t *testing.T, what string, got []byte, st *appState) {
	t.Helper()
	if len(got) != len(st.flushed) {
		t.Fatalf("%s: %d bytes, want %d", what, len(got), len(st.flushed))
	}
	for i := range got {
		if got[i] != st.flushed[i] && got[i] != st.written[i] && (st.pending == nil || got[i] != st.pending[i]) {
			t.Fatalf("%s: byte %d is %#x: neither the backup's, nor a write's (flushed %#x, written %#x)", what, i, got[i], st.flushed[i], st.written[i])
		}
	}
}
