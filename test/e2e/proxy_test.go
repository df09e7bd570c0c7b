package e2e

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// slowProxy forwards S3 requests to a server and, while delay is set,
// holds every GET of a block object for that long: a slow link that makes
// a restore last long enough to be interrupted. The Host header is passed
// through unchanged, so SigV4 signatures made for the proxy stay valid.
type slowProxy struct {
	Addr  string
	delay atomic.Int64 // nanoseconds
}

func startSlowProxy(t *testing.T, backend string) *slowProxy {
	t.Helper()
	p := &slowProxy{}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: backend})
	// Requests of a killed driver end as "context canceled"; not news.
	rp.ErrorLog = log.New(io.Discard, "", 0)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.Addr = l.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := time.Duration(p.delay.Load()); d > 0 && r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blocks/") {
			time.Sleep(d)
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return p
}

// setDelay sets how long each block GET is held (0 = none).
func (p *slowProxy) setDelay(d time.Duration) { p.delay.Store(int64(d)) }
