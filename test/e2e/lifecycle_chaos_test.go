package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/chainvol/chainvol/pkg/driver"
)

// chaosProxy forwards S3 requests to a server and injects the faults of
// the lifecycle interleavings (lifecycle_interleave_test.go): a share of
// requests answered 503 SlowDown (S3's "try again"), random delays, GETs
// of block objects stalled until released, and a hook that tells when a
// block is read (a restore runs) or written (an upload runs), so that a
// kill can land in the middle of one. The Host header passes unchanged,
// so SigV4 signatures made for the proxy stay valid.
type chaosProxy struct {
	Addr string

	errPermille atomic.Int64 // 503 answers per 1000 requests
	maxDelay    atomic.Int64 // nanoseconds: each request waits up to this
	stalls      atomic.Int64 // block GETs to stall
	putStalls   atomic.Int64 // block PUTs to stall
	requests    atomic.Int64 // forwarded, for the idle check

	mu      sync.Mutex
	release chan struct{} // closed by unstall
	onBlock chan string   // non-nil: "GET" or "PUT" of a block is sent (non-blocking)
	rp      *httputil.ReverseProxy
}

func startChaosProxy(t *testing.T, backend string) *chaosProxy {
	t.Helper()
	p := &chaosProxy{rp: httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: backend}),
		release: make(chan struct{})}
	p.rp.ErrorLog = log.New(io.Discard, "", 0) // killed drivers cut requests: not news
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.Addr = l.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(p.serve)}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { p.unstall(); _ = srv.Close() })
	return p
}

func (p *chaosProxy) serve(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	if d := p.maxDelay.Load(); d > 0 {
		time.Sleep(time.Duration(rand.Int64N(d)))
	}
	if rand.Int64N(1000) < p.errPermille.Load() {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>chaos proxy</Message></Error>`)
		return
	}
	if strings.Contains(r.URL.Path, "/blocks/") && (r.Method == http.MethodGet || r.Method == http.MethodPut) {
		p.mu.Lock()
		hook, rel := p.onBlock, p.release
		p.mu.Unlock()
		if hook != nil {
			select {
			case hook <- r.Method:
			default:
			}
		}
		n := &p.stalls
		if r.Method == http.MethodPut {
			n = &p.putStalls
		}
		if n.Load() > 0 && n.Add(-1) >= 0 {
			select { // a stalled GET: held until released or the client gives up
			case <-rel:
			case <-r.Context().Done():
				return
			}
		}
	}
	p.rp.ServeHTTP(w, r)
}

// unstall releases the stalled requests and stops stalling.
func (p *chaosProxy) unstall() {
	p.stalls.Store(0)
	p.putStalls.Store(0)
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.release)
	p.release = make(chan struct{})
}

// calm switches every fault off.
func (p *chaosProxy) calm() {
	p.errPermille.Store(0)
	p.maxDelay.Store(0)
	p.unstall()
}

// waitBlock waits up to d for the next block request of method ("GET":
// a restore, "PUT": an upload) and reports whether one came.
func (p *chaosProxy) waitBlock(method string, d time.Duration) bool {
	ch := make(chan string, 1)
	p.mu.Lock()
	p.onBlock = ch
	p.mu.Unlock()
	defer func() { p.mu.Lock(); p.onBlock = nil; p.mu.Unlock() }()
	deadline := time.After(d)
	for {
		select {
		case m := <-ch:
			if m == method {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// chaosDriver is a driver in a child process (TestDriverChild) that can be
// killed with SIGKILL and started again on the same pool and state
// directory, behind one client connection that reconnects by itself:
// calls while it is down fail Unavailable, as they would for the sidecars.
type chaosDriver struct {
	t    *testing.T
	opts driver.Options
	logf *os.File

	mu  sync.Mutex
	cmd *exec.Cmd // nil while down

	conn *grpc.ClientConn
	Ctrl csi.ControllerClient
	Node csi.NodeClient
	ID   csi.IdentityClient
}

func newChaosDriver(t *testing.T, opts driver.Options, logPath string) *chaosDriver {
	t.Helper()
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	c := &chaosDriver{t: t, opts: opts, logf: f}
	if c.conn, err = grpc.NewClient(opts.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		t.Fatal(err)
	}
	c.Ctrl, c.Node, c.ID = csi.NewControllerClient(c.conn), csi.NewNodeClient(c.conn), csi.NewIdentityClient(c.conn)
	t.Cleanup(func() { c.kill(); c.conn.Close(); f.Close() })
	return c
}

// start runs the driver with its options and waits until it answers Probe.
func (c *chaosDriver) start() error {
	raw, err := json.Marshal(c.opts)
	if err != nil {
		return err
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDriverChild$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	cmd.Stdout, cmd.Stderr = c.logf, c.logf
	fmt.Fprintf(c.logf, "=== start driver %s\n", time.Now().Format(time.RFC3339Nano))
	if err := cmd.Start(); err != nil {
		return err
	}
	c.mu.Lock()
	c.cmd = cmd
	c.mu.Unlock()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := c.ID.Probe(ctx, &csi.ProbeRequest{})
		cancel()
		if err == nil && resp.GetReady().GetValue() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("driver not ready after 20s: %v", err)
		}
	}
}

// kill sends SIGKILL to the driver's process (by its pid) and reaps it.
func (c *chaosDriver) kill() {
	c.mu.Lock()
	cmd := c.cmd
	c.cmd = nil
	c.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	fmt.Fprintf(c.logf, "=== killed driver %s\n", time.Now().Format(time.RFC3339Nano))
}

// down reports whether the driver is not running.
func (c *chaosDriver) down() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cmd == nil
}

// restart kills the driver and starts it again after pause.
func (c *chaosDriver) restart(pause time.Duration) error {
	c.kill()
	time.Sleep(pause)
	return c.start()
}
