package lazy_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/directio"
	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/lazy"
)

// kill -9 of a FUSE server whose connection a keeper holds (ServeKept),
// at a random point of an application's writes, fsyncs and reads, then a
// new server that takes the connection over after a random pause
// (TakeOver): no operation of the application fails, across the kill or
// after it; every read returns the backup's bytes and the writes' exactly;
// and after hydration the data file is the backup plus every write.
func TestInstantKeptServerRestart(t *testing.T) {
	b := newBackupSized(t, "ext4", 96<<20, 40<<20)
	src, err := os.ReadFile(filepath.Join(b.dir, "src.img"))
	if err != nil {
		t.Fatal(err)
	}
	testutil.RunSchedules(t, 3, func(t *testing.T, seed uint64) { runKeptSchedule(t, b, src, seed) })
}

func runKeptSchedule(t *testing.T, b *backup, src []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 28))
	keeper, _ := testutil.StartKeeper(t, filepath.Join(t.TempDir(), "keeper.sock"))
	c := newChild(t, b, len(src), 60*time.Millisecond, keeper.Path) // hydration ~1.5 s
	srv := startServer(t, c)
	f := openOnLoop(t, c)
	app := &keptApp{t: t, r: r, f: f, written: bytes.Clone(src)}
	killAt := time.Duration(r.Int64N(int64(1200 * time.Millisecond)))
	pause := time.Duration(r.Int64N(int64(500 * time.Millisecond)))
	restarted := make(chan *server, 1)
	killed := time.AfterFunc(killAt, func() {
		_ = srv.cmd.Process.Kill()
		_ = srv.cmd.Wait()
		time.Sleep(pause)
		c.TakeOver = true
		restarted <- startServer(t, c)
	})
	defer killed.Stop()
	ops := app.runUntil(restarted)
	srv = <-restarted
	ops += app.run(40) // and on after the takeover
	t.Logf("killed after %v and %d operations (the slowest %v), taken over after %v", killAt, ops, app.slowest, pause)
	closeLoop(t, f)
	srv.await(t, "hydrated")
	_ = srv.cmd.Process.Signal(syscall.SIGTERM)
	if err := srv.cmd.Wait(); err != nil {
		t.Fatalf("server after SIGTERM: %v", err)
	}
	data, err := os.ReadFile(c.Data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, app.written) {
		t.Fatal("the hydrated data file is not the backup plus every write")
	}
}

// openOnLoop opens a loop device over c's FUSE file with O_DIRECT, as a
// staged volume's application does (its reads reach the server), detached
// when the test ends. The test process must not hold the FUSE file
// itself: the exec of the next server closes the process's descriptors,
// and a close of a FUSE file waits for its server's FLUSH answer.
func openOnLoop(t *testing.T, c childServer) *os.File {
	t.Helper()
	dev, err := lazy.AttachWritable(context.Background(), filepath.Join(c.FuseDir, lazy.ImageName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lazy.Detach(dev) })
	f, err := os.OpenFile(dev, os.O_RDWR|syscall.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// closeLoop closes f and detaches its loop device (its last writes reach
// the server).
func closeLoop(t *testing.T, f *os.File) {
	t.Helper()
	dev := f.Name()
	f.Close()
	if err := lazy.Detach(dev); err != nil {
		t.Fatal(err)
	}
}

// keptApp writes, fsyncs and reads the FUSE file with r's random choices;
// any failure of an operation fails the test, as does a read of bytes
// other than written's.
type keptApp struct {
	t       *testing.T
	r       *rand.Rand
	f       *os.File
	written []byte
	slowest time.Duration
}

// runUntil runs operations until done has a value (which it leaves
// there), returning how many it ran.
func (a *keptApp) runUntil(done chan *server) int {
	for ops := 0; ; ops++ {
		select {
		case s := <-done:
			done <- s
			return ops
		default:
		}
		a.op()
	}
}

func (a *keptApp) run(n int) int {
	for range n {
		a.op()
	}
	return n
}

func (a *keptApp) op() {
	t, r := a.t, a.r
	const sector = 4096 // O_DIRECT on the loop device: whole sectors
	size := int64(len(a.written))
	off := sector * r.Int64N(size/sector-1)
	n := sector * (1 + r.Int64N(min(3<<20, size-off)/sector))
	start := time.Now()
	defer func() { a.slowest = max(a.slowest, time.Since(start)) }()
	switch k := r.IntN(10); {
	case k < 4:
		p := directio.AlignedBuf(n)
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		if _, err := a.f.WriteAt(p, off); err != nil {
			t.Fatalf("write of %d bytes at %d: %v", n, off, err)
		}
		copy(a.written[off:], p)
	case k < 6:
		if err := a.f.Sync(); err != nil {
			t.Fatalf("fsync: %v", err)
		}
	default:
		got := directio.AlignedBuf(n)
		if _, err := a.f.ReadAt(got, off); err != nil {
			t.Fatalf("read of %d bytes at %d: %v", n, off, err)
		}
		if !bytes.Equal(got, a.written[off:off+n]) {
			t.Fatalf("a read of %d bytes at %d returned bytes other than the backup's and the writes'", n, off)
		}
	}
}
