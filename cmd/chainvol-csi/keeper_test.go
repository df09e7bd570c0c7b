package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/fdkeep"
)

// TestKeeperMode runs `chainvol-csi keeper` as the chart's fd-keeper
// container does: it creates the socket's missing directory (0700) and
// listens there with mode 0600; a descriptor given to it (a pipe's read
// end, standing for /dev/fuse) is held after its giver closed its own and
// comes back as the same open file; SIGTERM ends it with exit 0 and a
// stop line, keeping the directory, and the held descriptor goes with the
// process (a writer of the pipe then gets EPIPE: nothing else holds it).
func TestKeeperMode(t *testing.T) {
	bin := buildBoth(t)
	dir := filepath.Join(t.TempDir(), "keeper")
	sock := filepath.Join(dir, "keeper.sock")
	var logs bytes.Buffer
	k := exec.Command(filepath.Join(bin, "chainvol-csi"), "keeper", "-socket", sock)
	k.Stderr = &logs
	if err := k.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- k.Wait() }()
	t.Cleanup(func() {
		_ = k.Process.Kill()
		<-exited
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no socket at %s after 20s\n%s", sock, logs.String())
		}
	}
	for p, want := range map[string]os.FileMode{dir: os.ModeDir | 0o700, sock: os.ModeSocket | 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode() != want {
			t.Errorf("%s: %v, %v; want mode %v", p, fi.Mode(), err, want)
		}
	}

	ctx := context.Background()
	c := fdkeep.Client{Path: sock}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := c.Put(ctx, "vol-1", int(r.Fd()), []byte("init")); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := w.Write([]byte("hello")); err != nil {
		t.Fatalf("write to a pipe whose only read end is kept: %v", err)
	}
	got, blob, err := c.Get(ctx, "vol-1")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := got.Read(buf); err != nil || string(buf) != "hello" || string(blob) != "init" {
		t.Fatalf("taken back: %q, blob %q, %v", buf, blob, err)
	}
	got.Close()

	if err := k.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		if err != nil {
			t.Fatalf("keeper after SIGTERM: %v, want exit 0\n%s", err, logs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("keeper still running 10s after SIGTERM\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "descriptor keeper stopped") {
		t.Errorf("no stop line in the keeper's log:\n%s", logs.String())
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("the socket's directory after the keeper stopped: %v", err)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("write after the keeper exited: %v, want EPIPE (the kept read end went with it)", err)
	}
}

// TestKeeperModeUsage: keeper without -socket, or with a stray argument,
// exits 2 at once, listening nowhere; -version prints the driver's line.
func TestKeeperModeUsage(t *testing.T) {
	bin := filepath.Join(buildBoth(t), "chainvol-csi")
	for _, args := range [][]string{{"keeper"}, {"keeper", "-socket", filepath.Join(t.TempDir(), "k.sock"), "extra"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		cancel()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "-socket") {
			t.Errorf("%v: %v, want exit status 2 naming -socket\n%s", args, err, out)
		}
	}
	out, err := exec.Command(bin, "keeper", "-version").Output()
	if want := "chainvol-csi " + tag + " ("; err != nil || !strings.HasPrefix(string(out), want) {
		t.Errorf("chainvol-csi keeper -version = %q, %v; want prefix %q", out, err, want)
	}
}
