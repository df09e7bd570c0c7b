// Package versitygw runs the real versitygw S3 gateway (bin/versitygw,
// built by make deps) with its posix backend as a child process on a free
// loopback port: the one start of the tests' gateway (internal/testutil)
// and of the bench's (bench/s3.go). It imports the standard library only.
package versitygw

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"time"
)

// Options say how to run the gateway.
type Options struct {
	// Bin is the versitygw binary; Dir the posix backend's root directory.
	Bin, Dir string
	// AccessKey and SecretKey are the root credentials. They go through
	// the environment, not argv, so ps cannot show them.
	AccessKey, SecretKey string
	// Args come before the backend ("--iam-dir DIR", "--cert F --key F");
	// PosixArgs after "posix", before Dir ("--versioning-dir DIR").
	Args, PosixArgs []string
	// Output receives the gateway's stdout and stderr (nil: discarded);
	// os/exec writes it from two goroutines unless it is an *os.File.
	Output io.Writer
	// Health is the client of the health check (nil: plain HTTP with a
	// 1 s timeout); HTTPS says the gateway serves TLS (Args name the cert).
	Health *http.Client
	HTTPS  bool
	// Timeout bounds the wait for the health check's 200 OK.
	Timeout time.Duration
}

// Gateway is a running versitygw.
type Gateway struct {
	// Endpoint is "127.0.0.1:PORT".
	Endpoint string
	// Pid is the gateway's process id.
	Pid    int
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start runs the gateway on a port free a moment ago and waits until its
// /health answers 200 OK. The port can be taken before versitygw binds it,
// so a caller may try again. Errors: no free port, the start's, the
// gateway exiting or not healthy within o.Timeout (it is killed then).
func Start(o Options) (*Gateway, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	endpoint := l.Addr().String()
	l.Close()
	args := append([]string{"--port", endpoint, "--health", "/health", "--quiet"}, o.Args...)
	args = append(append(append(args, "posix"), o.PosixArgs...), o.Dir)
	cmd := exec.Command(o.Bin, args...)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+o.AccessKey, "ROOT_SECRET_ACCESS_KEY="+o.SecretKey)
	cmd.Stdout, cmd.Stderr = o.Output, o.Output
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start versitygw: %w", err)
	}
	g := &Gateway{Endpoint: endpoint, Pid: cmd.Process.Pid, cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(g.exited) }()
	client, scheme := o.Health, "http"
	if client == nil {
		client = &http.Client{Timeout: time.Second}
	}
	if o.HTTPS {
		scheme = "https"
	}
	if err := g.waitHealthy(client, scheme+"://"+endpoint+"/health", o.Timeout); err != nil {
		g.Stop()
		return nil, err
	}
	return g, nil
}

// Stop kills the gateway and waits for it to exit.
func (g *Gateway) Stop() {
	_ = g.cmd.Process.Kill()
	<-g.exited
}

func (g *Gateway) waitHealthy(client *http.Client, healthURL string, timeout time.Duration) error {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-g.exited:
			return errors.New("versitygw exited during start")
		default:
		}
		if resp, err := client.Get(healthURL); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("versitygw not healthy after %v", timeout)
}
