// Package csitest starts a real chainvol driver on a unix socket for the
// sanity and e2e tests, and dials it the way the sidecars and kubelet do.
// It must never be imported by non-test code.
package csitest

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/driver"
)

// Node is one running driver instance with its pool and a client connection.
type Node struct {
	Opts     driver.Options
	Endpoint string // "unix:///.../csi.sock"
	Pool     *backend.FilePool
	Conn     *grpc.ClientConn
	Ctrl     csi.ControllerClient
	Node     csi.NodeClient
	// Metrics serves the driver's /metrics (Driver.MetricsHandler).
	Metrics http.Handler
	stop    context.CancelFunc
	done    chan error
}

// Start opens a pool in poolDir and serves a driver for nodeID on a socket
// in a fresh temporary directory; extra adjusts the options (backup targets...).
// The driver is stopped and the pool closed when the test ends.
func Start(t testing.TB, nodeID, poolDir string, extra func(*driver.Options)) *Node {
	t.Helper()
	dir := t.TempDir()
	opts := driver.Options{
		Endpoint: "unix://" + filepath.Join(dir, "csi.sock"), NodeID: nodeID, PoolDir: poolDir,
		StateDir: filepath.Join(dir, "state"), DriverName: driver.DefaultDriverName,
	}
	if extra != nil {
		extra(&opts)
	}
	pool, err := backend.Open(poolDir)
	if err != nil {
		t.Fatalf("open pool: %v", err)
	}
	d, err := driver.New(opts, pool, nil, nil)
	if err != nil {
		t.Fatalf("new driver: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Node{Opts: opts, Endpoint: opts.Endpoint, Pool: pool, Metrics: d.MetricsHandler(), stop: cancel, done: make(chan error, 1)}
	go func() { n.done <- d.Run(ctx) }()
	conn, err := grpc.NewClient(opts.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial %s: %v", opts.Endpoint, err)
	}
	n.Conn, n.Ctrl, n.Node = conn, csi.NewControllerClient(conn), csi.NewNodeClient(conn)
	waitReady(t, csi.NewIdentityClient(conn))
	t.Cleanup(n.Stop)
	return n
}

// Stop stops the driver and closes the pool; it may be called twice.
func (n *Node) Stop() {
	if n.stop == nil {
		return
	}
	n.Conn.Close()
	n.stop()
	select {
	case <-n.done:
	case <-time.After(30 * time.Second):
	}
	n.Pool.Close()
	n.stop = nil
}

// waitReady polls Probe until the driver answers ready (at most 10 s).
func waitReady(t testing.TB, id csi.IdentityClient) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := id.Probe(ctx, &csi.ProbeRequest{})
		cancel()
		if err == nil && resp.GetReady().GetValue() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("driver not ready after 10s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
