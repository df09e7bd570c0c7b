package e2e

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/csitest"
)

// faultProxy forwards S3 requests to a server, with faults switched on and
// off by the test: refused connections (down), writes answered with S3's
// 403 AccessDenied (a bucket policy that refuses them), writes held until
// released (a stalled upload). The Host header is passed through, so SigV4
// signatures made for the proxy stay valid.
type faultProxy struct {
	t          *testing.T
	Addr       string
	rp         *httputil.ReverseProxy
	denyWrites atomic.Bool
	held       atomic.Int64 // writes waiting now
	mu         sync.Mutex
	srv        *http.Server             // nil while down
	hold       chan struct{}            // non-nil: writes wait until it is closed
	holdOnly   func(*http.Request) bool // nil: hold every write
	latency    atomic.Int64             // nanoseconds added to every request
}

func startFaultProxy(t *testing.T, backend string) *faultProxy {
	t.Helper()
	p := &faultProxy{t: t, rp: httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: backend})}
	p.rp.ErrorLog = log.New(io.Discard, "", 0)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.Addr = l.Addr().String()
	p.serve(l)
	t.Cleanup(func() { p.release(); p.down() })
	return p
}

func (p *faultProxy) serve(l net.Listener) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.srv = &http.Server{Handler: http.HandlerFunc(p.handle)}
	go func(s *http.Server) { _ = s.Serve(l) }(p.srv)
}

func (p *faultProxy) handle(w http.ResponseWriter, r *http.Request) {
	time.Sleep(time.Duration(p.latency.Load()))
	write := r.Method == http.MethodPut || r.Method == http.MethodPost || r.Method == http.MethodDelete
	if write && p.denyWrites.Load() {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied (test proxy refuses writes)</Message></Error>`)
		return
	}
	p.mu.Lock()
	hold, only := p.hold, p.holdOnly
	p.mu.Unlock()
	if write && hold != nil && (only == nil || only(r)) {
		p.held.Add(1)
		<-hold
		p.held.Add(-1)
	}
	p.rp.ServeHTTP(w, r)
}

// down closes the listener and every connection: new ones are refused.
func (p *faultProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.srv != nil {
		_ = p.srv.Close()
		p.srv = nil
	}
}

// up listens again on the same address.
func (p *faultProxy) up() {
	p.t.Helper()
	l, err := net.Listen("tcp", p.Addr)
	if err != nil {
		p.t.Fatalf("proxy up again on %s: %v", p.Addr, err)
	}
	p.serve(l)
}

// holdWrites makes writes wait until release.
func (p *faultProxy) holdWrites() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold = make(chan struct{})
}

// waitHeld waits (up to 30 s) until a write is held.
func (p *faultProxy) waitHeld() {
	p.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); p.held.Load() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			p.t.Fatal("no write reached the proxy within 30s")
		}
	}
}

// release lets held writes through and stops holding new ones.
func (p *faultProxy) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hold != nil {
		close(p.hold)
		p.hold = nil
	}
}

// proxiedDriver starts versitygw, a faultProxy in front of it and a driver
// whose target "offsite" goes through the proxy.
func proxiedDriver(t *testing.T) (*csitest.Node, *faultProxy) {
	t.Helper()
	s3 := startS3(t)
	p := startFaultProxy(t, s3.srv.Endpoint)
	return startDriver(t, "node-a", s3.opts(s3.url(p.Addr))), p
}
