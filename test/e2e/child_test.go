package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/driver"
)

// childEnv carries the JSON driver options of a driver that runs in a
// child process (this test binary re-executed), so that a test can kill
// it with SIGKILL as a node crash would.
const childEnv = "CHAINVOL_E2E_DRIVER"

// TestDriverChild is the child half of startChild: it serves a driver
// until the process is killed, or, on SIGTERM or SIGINT, until the driver
// has stopped, as cmd/chainvol-csi does.
func TestDriverChild(t *testing.T) {
	raw := os.Getenv(childEnv)
	if raw == "" {
		t.Skip("run through startChild")
	}
	var opts driver.Options
	if err := json.Unmarshal([]byte(raw), &opts); err != nil {
		t.Fatal(err)
	}
	pool, err := backend.Open(opts.PoolDir)
	if err != nil {
		t.Fatalf("open pool: %v", err)
	}
	d, err := driver.New(opts, pool, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := d.Run(ctx); err != nil {
		t.Fatal(err)
	}
}

// childDriver is a driver in a child process and a connection to it.
type childDriver struct {
	cmd  *exec.Cmd
	log  *syncBuffer // the child's stderr (klog), also copied to ours
	conn *grpc.ClientConn
	Ctrl csi.ControllerClient
	Node csi.NodeClient
}

// startChild runs a driver with opts in a child process and waits until
// it answers Probe. The child is killed when the test ends, if still alive.
func startChild(t *testing.T, opts driver.Options) *childDriver {
	t.Helper()
	raw, err := json.Marshal(opts)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDriverChild$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	c := &childDriver{cmd: cmd, log: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = os.Stderr, io.MultiWriter(os.Stderr, c.log)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.kill)
	if c.conn, err = grpc.NewClient(opts.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		t.Fatal(err)
	}
	c.Ctrl, c.Node = csi.NewControllerClient(c.conn), csi.NewNodeClient(c.conn)
	id := csi.NewIdentityClient(c.conn)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := id.Probe(ctx, &csi.ProbeRequest{})
		cancel()
		if err == nil && resp.GetReady().GetValue() {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("child driver not ready after 20s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill sends SIGKILL to the child (only this process, by its pid) and
// reaps it; it may be called twice.
func (c *childDriver) kill() {
	if c.cmd == nil {
		return
	}
	if c.conn != nil {
		c.conn.Close()
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	_ = c.cmd.Wait()
	c.cmd = nil
}

// terminate sends SIGTERM to the child (only this process, by its pid)
// and waits up to limit for it to exit. It returns how long the exit took
// and the child's exit error (nil: exit status 0).
func (c *childDriver) terminate(t *testing.T, limit time.Duration) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.cmd.Wait() }()
	select {
	case err := <-exited:
		took := time.Since(start)
		c.conn.Close() // only now: calls in flight get the driver's answers
		c.cmd = nil
		return took, err
	case <-time.After(limit):
		c.kill()
		t.Fatalf("child driver still running %v after SIGTERM", limit)
		return 0, nil
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is what was written so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
