// Command chainvol-csi is chainvol's CSI node plugin: it serves the Identity,
// Controller and Node services over a node-local lvol pool on a unix socket.
// One instance runs per node (a DaemonSet), beside an external-provisioner in
// node-deployment mode. `chainvol-csi keeper -socket PATH` runs the
// descriptor keeper instead (keeper.go), in a container of its own.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/driver"
	"github.com/chainvol/chainvol/pkg/version"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == keeperCommand {
		os.Exit(keeperMain(os.Args[2:]))
	}
	var opts driver.Options
	fs := flag.NewFlagSet("chainvol-csi", flag.ContinueOnError)
	opts.AddFlags(fs)
	showVersion := fs.Bool("version", false, "print the version, commit and Go version, then exit")
	klog.InitFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if *showVersion {
		fmt.Println("chainvol-csi " + version.String())
		return
	}
	klog.InfoS("starting chainvol-csi", "version", version.Get().Version, "commit", version.Get().Commit)
	if err := run(opts); err != nil {
		klog.ErrorS(err, "chainvol-csi failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.InfoS("chainvol-csi stopped")
	klog.Flush()
}

// run opens the pool, builds the driver and serves until SIGINT or SIGTERM,
// then returns once the driver has stopped its calls and jobs, within
// -shutdown-timeout (driver.Driver.Run).
func run(opts driver.Options) error {
	pool, err := backend.Open(opts.PoolDir)
	if err != nil {
		return fmt.Errorf("open pool %s: %w", opts.PoolDir, err)
	}
	defer pool.Close()
	d, err := driver.New(opts, pool, nil, nil)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if opts.MetricsAddress != "" {
		go serveMetrics(opts.MetricsAddress, d.MetricsHandler())
	}
	if opts.KubeletRegistrationPath != "" {
		r := &driver.Registrar{DriverName: opts.DriverName, Endpoint: opts.KubeletRegistrationPath, Dir: driver.DefaultRegistrationDir}
		go serveRegistration(ctx, r)
	}
	return d.Run(ctx)
}

// serveRegistration serves the kubelet's plugin registration; a failure is
// logged, not fatal: the CSI socket keeps serving the sidecars, and the
// missing CSINode entry shows the problem to the operator.
func serveRegistration(ctx context.Context, r *driver.Registrar) {
	if err := r.Serve(ctx); err != nil {
		klog.ErrorS(err, "kubelet plugin registration stopped", "socket", r.SocketPath())
	}
}

// serveMetrics serves Prometheus metrics; a failure is logged, not fatal,
// because volumes matter more than metrics.
func serveMetrics(addr string, h http.Handler) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	if err := http.ListenAndServe(addr, mux); err != nil {
		klog.ErrorS(err, "metrics server stopped", "address", addr)
	}
}
