package lazy_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/testutil"
)

// kill -9 of the FUSE server whose connection a keeper holds, then kill -9
// of the server that takes it over at a random point of its takeover
// (before it got the descriptor, while it opens the image, replays INIT,
// or after it serves), then a third takeover: the application's I/O on
// the loop device never fails and never reads other bytes than the
// backup's and its writes', and the hydrated data file is the backup plus
// every write.
func TestInstantKeptServerKilledInTakeOver(t *testing.T) {
	b := newBackupSized(t, "ext4", 96<<20, 40<<20)
	src, err := os.ReadFile(filepath.Join(b.dir, "src.img"))
	if err != nil {
		t.Fatal(err)
	}
	testutil.RunSchedules(t, 3, func(t *testing.T, seed uint64) { runKeptTwiceSchedule(t, b, src, seed) })
}

func runKeptTwiceSchedule(t *testing.T, b *backup, src []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 29))
	keeper, _ := testutil.StartKeeper(t, filepath.Join(t.TempDir(), "keeper.sock"))
	c := newChild(t, b, len(src), 60*time.Millisecond, keeper.Path)
	srv := startServer(t, c)
	f := openOnLoop(t, c)
	app := &keptApp{t: t, r: r, f: f, written: bytes.Clone(src)}
	killAt := time.Duration(r.Int64N(int64(800 * time.Millisecond)))
	secondFor := time.Duration(r.Int64N(int64(80 * time.Millisecond))) // the takeover takes some 10-60 ms
	restarted := make(chan *server, 1)
	secondServed := false
	killed := time.AfterFunc(killAt, func() {
		_ = srv.cmd.Process.Kill()
		_ = srv.cmd.Wait()
		c.TakeOver = true
		second := startServerNoWait(t, c)
		time.Sleep(secondFor)
		_ = second.cmd.Process.Kill()
		_ = second.cmd.Wait()
		for l := range second.lines {
			secondServed = secondServed || l == "ready"
		}
		restarted <- startServer(t, c)
	})
	defer killed.Stop()
	ops := app.runUntil(restarted)
	srv = <-restarted
	ops += app.run(40)
	t.Logf("killed after %v and the taker-over after %v (it served: %t); %d operations (the slowest %v)", killAt, secondFor, secondServed, ops, app.slowest)
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
