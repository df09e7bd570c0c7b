package version

import (
	"runtime/debug"
	"testing"
)

// TestResolve: the link-time tag wins over the build info, the build info's
// vcs.revision gives the commit (with -dirty), and a bare git describe
// output gives its abbreviated commit when nothing else does.
func TestResolve(t *testing.T) {
	vcs := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}, {Key: "vcs.modified", Value: "true"}}}
	released := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "v1.4.0"}}
	for _, c := range []struct {
		name, tag, commit string
		bi                *debug.BuildInfo
		want              Info
	}{
		{"tag and vcs", "v1.2.3-4-gabc1234-dirty", "", vcs,
			Info{"v1.2.3-4-gabc1234-dirty", "0123456789abcdef0123456789abcdef01234567-dirty", "go1.99"}},
		{"tag only", "v1.2.3-4-gabc1234", "", nil, Info{"v1.2.3-4-gabc1234", "abc1234", ""}},
		{"describe --always, no tags", "1243adb-dirty", "", &debug.BuildInfo{GoVersion: "go1.99"},
			Info{"1243adb-dirty", "1243adb-dirty", "go1.99"}},
		{"no tag yet (hack/version.sh)", "0.0.0-dev+1243adb-dirty", "", nil, Info{"0.0.0-dev+1243adb-dirty", "1243adb-dirty", ""}},
		{"no git (hack/version.sh)", "0.0.0-dev+unknown", "", nil, Info{"0.0.0-dev+unknown", Unknown, ""}},
		{"exact tag", "v2.0.0", "", &debug.BuildInfo{GoVersion: "go1.99"}, Info{"v2.0.0", Unknown, "go1.99"}},
		{"go install of a release", "", "", released, Info{"v1.4.0", Unknown, "go1.99"}},
		{"link-time commit", "v2.0.0", "feedbeef", vcs, Info{"v2.0.0", "feedbeef", "go1.99"}},
		{"nothing", "", "", nil, Info{"devel", Unknown, ""}},
	} {
		got := resolve(c.tag, c.commit, c.bi)
		if c.want.GoVersion == "" {
			c.want.GoVersion = got.GoVersion // runtime.Version()
		}
		if got != c.want {
			t.Errorf("%s: resolve = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestString(t *testing.T) {
	got := Info{"v1.0.0", "abc1234", "go1.26.8"}.String()
	if want := "v1.0.0 (commit abc1234, go1.26.8)"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}
