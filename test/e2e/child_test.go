package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
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
// until the process is killed.
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
	if err := d.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// childDriver is a driver in a child process and a connection to it.
type childDriver struct {
	cmd  *exec.Cmd
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
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &childDriver{cmd: cmd}
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
