package driver

import (
	"context"
	"flag"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// TestRegistrarAsKubelet dials the registration socket the way the kubelet's
// plugin watcher does and checks what it learns, then that the socket goes
// away when the registrar stops (which is how the kubelet deregisters).
func TestRegistrarAsKubelet(t *testing.T) {
	dir := t.TempDir()
	r := &Registrar{DriverName: DefaultDriverName, Endpoint: "/var/lib/kubelet/plugins/chainvol.csi.io/csi.sock", Dir: dir}
	if got, want := r.SocketPath(), filepath.Join(dir, "chainvol.csi.io-reg.sock"); got != want {
		t.Fatalf("SocketPath = %q, want %q", got, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx) }()

	conn := dialWhenUp(t, r.SocketPath())
	defer conn.Close()
	c := registerapi.NewRegistrationClient(conn)
	info, err := c.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatalf("GetInfo: %v", err)
	}
	if info.Type != registerapi.CSIPlugin || info.Name != DefaultDriverName || info.Endpoint != r.Endpoint || len(info.SupportedVersions) == 0 {
		t.Fatalf("GetInfo = %+v", info)
	}
	for _, ok := range []bool{false, true} {
		if _, err := c.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: ok, Error: "refused"}); err != nil {
			t.Fatalf("NotifyRegistrationStatus(%v): %v", ok, err)
		}
	}

	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if _, err := net.Dial("unix", r.SocketPath()); err == nil {
		t.Fatal("registration socket still accepts connections after stop")
	}
}

// dialWhenUp waits for the socket to accept connections, as the kubelet only
// dials a socket once it exists.
func dialWhenUp(t *testing.T, path string) *grpc.ClientConn {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("registration socket %s never came up", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	return conn
}

// TestKubeletRegistrationPathFlag: the flag fills the option, is off by
// default (deploy/base keeps the node-driver-registrar sidecar) and must be
// absolute, since the kubelet resolves it on the host.
func TestKubeletRegistrationPathFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    string
		wantErr bool
	}{
		{args: nil, want: ""},
		{args: []string{"-kubelet-registration-path=/var/lib/kubelet/plugins/chainvol.csi.io/csi.sock"}, want: "/var/lib/kubelet/plugins/chainvol.csi.io/csi.sock"},
		{args: []string{"-kubelet-registration-path=plugins/csi.sock"}, want: "plugins/csi.sock", wantErr: true},
	} {
		var o Options
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(append([]string{"-node-id=n1"}, tc.args...)); err != nil {
			t.Fatalf("%v: parse: %v", tc.args, err)
		}
		if o.KubeletRegistrationPath != tc.want {
			t.Errorf("%v: KubeletRegistrationPath = %q, want %q", tc.args, o.KubeletRegistrationPath, tc.want)
		}
		if err := o.Validate(); (err != nil) != tc.wantErr {
			t.Errorf("%v: Validate() = %v, want error %v", tc.args, err, tc.wantErr)
		}
	}
}
