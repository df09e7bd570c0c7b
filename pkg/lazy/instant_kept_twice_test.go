package lazy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/lazy"
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

// startServerNoWait is startServer without waiting for "ready".
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
			}
		}
		close(s.lines)
	}()
	return s
}

func runKeptTwiceSchedule(t *testing.T, b *backup, src []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 29))
	dir := t.TempDir()
	keeper, _ := testutil.StartKeeper(t, filepath.Join(dir, "keeper.sock"))
	c := childServer{URL: b.srv.URL("t"), Access: b.srv.AccessKey, Secret: b.srv.SecretKey, Chain: chain, ID: b.id,
		Data: filepath.Join(dir, "data"), Rec: filepath.Join(dir, "hydration", "vol.bits"), FuseDir: filepath.Join(dir, "fuse"),
		FetchDelay: 60 * time.Millisecond, Keeper: keeper.Path}
	if err := os.Mkdir(c.FuseDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", c.FuseDir).Run() })
	if err := os.WriteFile(c.Data, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(c.Data, int64(len(src))); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, c)
	dev, err := lazy.AttachWritable(context.Background(), filepath.Join(c.FuseDir, lazy.ImageName))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(dev, os.O_RDWR|syscall.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lazy.Detach(dev) }()
	defer f.Close()
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
	f.Close()
	if err := lazy.Detach(dev); err != nil {
		t.Fatal(err)
	}
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
