package testutil

import (
	"context"
	"testing"

	"github.com/chainvol/chainvol/pkg/fdkeep"
)

// StartKeeper runs a descriptor keeper (pkg/fdkeep) at socket path in the
// test's process, which stands for the keeper's own container beside the
// driver's; it closes what it keeps when the test ends.
func StartKeeper(t testing.TB, path string) fdkeep.Client {
	t.Helper()
	l, err := fdkeep.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	k := &fdkeep.Keeper{}
	go func() { _ = k.Serve(ctx, l) }()
	t.Cleanup(func() { cancel(); k.Close() })
	return fdkeep.Client{Path: path}
}
