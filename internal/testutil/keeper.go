package testutil

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/chainvol/chainvol/pkg/fdkeep"
)

// StartKeeper runs a descriptor keeper (pkg/fdkeep) at socket path in the
// test's process, which stands for the keeper's own container beside the
// driver's; it closes what it keeps when the test ends, or when stop is
// called (a keeper's restart: start another on the same path).
func StartKeeper(t testing.TB, path string) (c fdkeep.Client, stop func()) {
	t.Helper()
	l, err := fdkeep.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	k := &fdkeep.Keeper{}
	served := make(chan struct{})
	go func() { _ = k.Serve(ctx, l); close(served) }()
	stop = func() { cancel(); <-served; k.Close() }
	// The test's temporary directories share a parent: what a failed run
	// left of FUSE under it is released once everything else has ended.
	root := filepath.Dir(t.TempDir())
	t.Cleanup(func() { stop(); releaseFUSE(t, root) })
	return fdkeep.Client{Path: path}, stop
}
