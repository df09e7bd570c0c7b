package e2e

import (
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/csitest"
)

// outageEnv is a backup on versitygw behind an outage proxy, with a driver
// that never restores from a local base (the restore must read the target).
type outageEnv struct {
	n     *csitest.Node
	proxy *outageProxy
	s3    s3Target
	id    string   // the backup's snapshot id
	want  [32]byte // the volume's sha256
}

// outageSource makes an outageEnv: a 256 MiB block volume with data in four
// 64 MiB stretches, backed up as name.
func outageSource(t *testing.T, name string) outageEnv {
	t.Helper()
	e := outageEnv{s3: startS3(t)}
	e.proxy = startOutageProxy(t, e.s3.srv.Endpoint)
	e.n = startDriver(t, "node-a", both(e.s3.opts(e.s3.url(e.proxy.Addr)), noLocalBase))
	e.id, e.want = blockBackup(t, e.n, name, outageSize, []int64{0, 64 * mib, 128 * mib, 192 * mib}, int(64*mib))
	return e
}

// outageSize is the volume size of outageSource, in bytes.
const outageSize = 256 * mib

// outageProxy forwards S3 requests to a server and injects faults: a delay
// for every HEAD (an object Stat), a delay for every GET of a block
// object, and outages during which nothing listens on its address, so
// that clients get "connection refused". It counts the requests it
// forwards. The Host header passes unchanged, so SigV4 signatures made for
// the proxy stay valid.
type outageProxy struct {
	Addr string

	headDelay, getDelay atomic.Int64 // nanoseconds
	heads, blockGets    atomic.Int64

	t   *testing.T
	rp  *httputil.ReverseProxy
	mu  sync.Mutex
	srv *http.Server // nil during an outage
}

func startOutageProxy(t *testing.T, backend string) *outageProxy {
	t.Helper()
	p := &outageProxy{t: t, rp: httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: backend})}
	p.rp.ErrorLog = log.New(io.Discard, "", 0) // cut connections are the point
	p.listen("127.0.0.1:0")
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.srv != nil {
			_ = p.srv.Close()
		}
	})
	return p
}

// listen serves on addr; it retries briefly, as the port of a closed
// listener can take a moment to become free again.
func (p *outageProxy) listen(addr string) {
	var l net.Listener
	var err error
	for range 50 {
		if l, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		p.t.Errorf("proxy listen on %s: %v", addr, err)
		return
	}
	p.Addr = l.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(p.serve)}
	p.mu.Lock()
	p.srv = srv
	p.mu.Unlock()
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.t.Logf("proxy: %v", err)
		}
	}()
}

func (p *outageProxy) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodHead:
		p.heads.Add(1)
		time.Sleep(time.Duration(p.headDelay.Load()))
	case r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blocks/"):
		p.blockGets.Add(1)
		time.Sleep(time.Duration(p.getDelay.Load()))
	}
	p.rp.ServeHTTP(w, r)
}

// outage closes the listener and every open connection now and listens
// again on the same address after d; the returned channel is closed then.
func (p *outageProxy) outage(d time.Duration) <-chan struct{} {
	p.mu.Lock()
	srv := p.srv
	p.srv = nil
	p.mu.Unlock()
	_ = srv.Close()
	back := make(chan struct{})
	go func() {
		time.Sleep(d)
		p.listen(p.Addr)
		close(back)
	}()
	return back
}
