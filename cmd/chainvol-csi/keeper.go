package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/fdkeep"
	"github.com/chainvol/chainvol/pkg/version"
)

// keeperCommand is the first argument that runs the descriptor keeper
// instead of the driver: `chainvol-csi keeper -socket PATH`.
const keeperCommand = "keeper"

// keeperMain is `chainvol-csi keeper`: the descriptor keeper (pkg/fdkeep)
// the driver's -fd-keeper names, holding a copy of each FUSE connection's
// /dev/fuse descriptor so that the volumes it serves outlive a restart of
// the driver's container. It must run in a container of its own (the
// chart's fd-keeper): a container restart ends every process in it. args
// are the arguments after "keeper"; the result is the exit code.
func keeperMain(args []string) int {
	fs := flag.NewFlagSet("chainvol-csi keeper", flag.ContinueOnError)
	socket := fs.String("socket", "", "the unix socket to listen on (SOCK_SEQPACKET, mode 0600), the driver's -fd-keeper; its directory is created (0700) if missing (required)")
	showVersion := fs.Bool("version", false, "print the version, commit and Go version, then exit")
	klog.InitFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Println("chainvol-csi " + version.String())
		return 0
	}
	if *socket == "" || fs.NArg() > 0 {
		fmt.Fprintln(fs.Output(), "usage: chainvol-csi keeper -socket PATH (-socket is required; no other arguments)")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	klog.InfoS("starting chainvol-csi descriptor keeper", "socket", *socket, "version", version.Get().Version, "commit", version.Get().Commit)
	if err := runKeeper(ctx, *socket); err != nil {
		klog.ErrorS(err, "chainvol-csi descriptor keeper failed", "socket", *socket)
		klog.Flush()
		return 1
	}
	klog.InfoS("chainvol-csi descriptor keeper stopped", "socket", *socket)
	klog.Flush()
	return 0
}

// runKeeper listens at path and serves the keeper until ctx ends. The
// descriptors it holds are not closed here but by the process's exit: a
// keeper that stops (its pod deleted, the node drained) takes them with
// it, and a FUSE connection whose driver is gone too is aborted, as it
// would be without a keeper.
func runKeeper(ctx context.Context, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	l, err := fdkeep.Listen(path)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	return (&fdkeep.Keeper{}).Serve(ctx, l)
}
