package driver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/internal/testutil"
)

// TestLoopList: loopDevices.list finds what losetup --associated finds
// (the reference it replaced), in device order: both devices of a file
// attached twice, also through a symlink to it, one of another file, none
// of a file never attached or no longer; a missing file is an error.
func TestLoopList(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a.img"), filepath.Join(dir, "b.img"), filepath.Join(dir, "c.img")
	for _, f := range []string{a, b, c} {
		mustOK(t, os.WriteFile(f, make([]byte, 1<<20), 0o600))
	}
	attach := func(f string) string {
		dev := testutil.Run(t, "losetup", "--find", "--show", f)
		t.Cleanup(func() { _ = exec.Command("losetup", "--detach", dev).Run() })
		return dev
	}
	a1, a2, b1 := attach(a), attach(a), attach(b)
	link := filepath.Join(dir, "link")
	mustOK(t, os.Symlink(a, link))
	l := &loopDevices{}
	ctx := context.Background()
	for _, tc := range []struct {
		file string
		want []string
	}{{a, sortedLoops(a1, a2)}, {link, sortedLoops(a1, a2)}, {b, []string{b1}}, {c, nil}} {
		got, err := l.list(ctx, tc.file)
		mustOK(t, err)
		ref := strings.Fields(testutil.Run(t, "losetup", "--noheadings", "--output", "NAME", "--associated", tc.file))
		if !slices.Equal(got, tc.want) || !slices.Equal(got, sortedLoops(ref...)) {
			t.Errorf("list(%s) = %v, want %v (losetup --associated: %v)", filepath.Base(tc.file), got, tc.want, ref)
		}
	}
	testutil.Run(t, "losetup", "--detach", b1)
	if got, err := l.list(ctx, b); err != nil || len(got) != 0 {
		t.Errorf("list of a detached file = %v, %v; want none", got, err)
	}
	if _, err := l.list(ctx, filepath.Join(dir, "missing.img")); err == nil {
		t.Error("list of a missing file: no error")
	}
}

// sortedLoops is devs in device number order.
func sortedLoops(devs ...string) []string {
	out := slices.Clone(devs)
	slices.SortFunc(out, func(x, y string) int { return loopNumber(x) - loopNumber(y) })
	return out
}
