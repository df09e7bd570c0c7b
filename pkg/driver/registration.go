package driver

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"google.golang.org/grpc"
	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// DefaultRegistrationDir is where the kubelet's plugin watcher looks for
// registration sockets (/var/lib/kubelet/plugins_registry on the host),
// mounted into the pod at the same path node-driver-registrar uses.
const DefaultRegistrationDir = "/registration"

// Registrar answers the kubelet's plugin watcher (the pluginregistration v1
// API) for this driver, so a node can run without the node-driver-registrar
// sidecar. The kubelet finds {Dir}/{DriverName}-reg.sock, calls GetInfo to
// learn the driver's name and its CSI socket as the host sees it, then calls
// NotifyRegistrationStatus with the outcome.
type Registrar struct {
	registerapi.UnimplementedRegistrationServer
	// DriverName is the CSI driver name the kubelet registers.
	DriverName string
	// Endpoint is the driver's CSI socket path as the kubelet sees it.
	Endpoint string
	// Dir is the plugin watcher's directory as this process sees it.
	Dir string
}

// supportedCSIVersions are the CSI versions the kubelet may speak to us; the
// kubelet accepts any 1.x.
var supportedCSIVersions = []string{"1.0.0"}

// SocketPath is the registration socket the kubelet watches for.
func (r *Registrar) SocketPath() string {
	return filepath.Join(r.Dir, r.DriverName+"-reg.sock")
}

// GetInfo tells the kubelet which CSI socket serves which driver.
func (r *Registrar) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              r.DriverName,
		Endpoint:          r.Endpoint,
		SupportedVersions: supportedCSIVersions,
	}, nil
}

// NotifyRegistrationStatus logs the kubelet's verdict. A refusal is logged,
// not fatal: the kubelet retries when the socket is recreated, and exiting
// would only restart the pod into the same refusal.
func (r *Registrar) NotifyRegistrationStatus(_ context.Context, st *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if st.PluginRegistered {
		klog.InfoS("registered with kubelet", "driver", r.DriverName, "endpoint", r.Endpoint)
	} else {
		klog.ErrorS(errors.New(st.Error), "kubelet refused registration", "driver", r.DriverName)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// Serve listens on the registration socket until ctx is done, then removes
// the socket so the kubelet deregisters the plugin.
func (r *Registrar) Serve(ctx context.Context) error {
	path := r.SocketPath()
	lis, err := listenUnix(path, "registration socket")
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, r)
	go func() {
		<-ctx.Done()
		srv.Stop()
		_ = os.Remove(path)
	}()
	klog.InfoS("serving kubelet plugin registration", "socket", path, "endpoint", r.Endpoint)
	return srv.Serve(lis)
}
