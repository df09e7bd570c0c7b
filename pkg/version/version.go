// Package version reports which build of chainvol is running: the version
// (a release tag, or hack/version.sh's git describe form when built by the
// Makefile), the VCS commit and the Go version. Every place that shows a
// version (chainvol-csi -version, chainvolctl version, the CSI
// GetPluginInfo vendor_version, the chainvol_build_info metric) reads it
// from here, so they cannot disagree.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// tag is set at link time by the Makefile:
//
//	-ldflags "-X github.com/chainvol/chainvol/pkg/version.tag=$(bash hack/version.sh)"
//
// Empty when built without it (go build, go install, go test).
var tag string

// commit may be set at link time as well (-X ...version.commit=SHA); when
// empty, the vcs.revision that the go command stamps into the build info
// is used (absent under -buildvcs=false and in tests).
var commit string

// Unknown stands for a value that no source provided.
const Unknown = "unknown"

// Info is one build's identity.
type Info struct {
	// Version is the link-time tag, else the main module's version from
	// the build info (a release installed with go install reports
	// "v1.2.3"), else "devel".
	Version string `json:"version"`
	// Commit is the VCS revision (a hex SHA, or "unknown"), with
	// "-dirty" appended when the build info says the tree was modified.
	Commit string `json:"commit"`
	// GoVersion is the toolchain that built the binary, e.g. "go1.26.8".
	GoVersion string `json:"goVersion"`
}

// Get returns this binary's Info.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(tag, commit, bi)
}

// String is Get().String().
func String() string { return Get().String() }

// String renders "VERSION (commit COMMIT, GOVERSION)".
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, %s)", i.Version, i.Commit, i.GoVersion)
}

// resolve combines the link-time values with the build info (bi may be nil).
func resolve(tag, commit string, bi *debug.BuildInfo) Info {
	i := Info{Version: tag, Commit: commit, GoVersion: runtime.Version()}
	if bi != nil {
		if bi.GoVersion != "" {
			i.GoVersion = bi.GoVersion
		}
		if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version
		}
		if i.Commit == "" {
			i.Commit = vcsCommit(bi.Settings)
		}
	}
	if i.Version == "" {
		i.Version = "devel"
	}
	if i.Commit == "" {
		i.Commit = commitFromTag(tag)
	}
	return i
}

// vcsCommit reads vcs.revision and vcs.modified from the build settings.
func vcsCommit(settings []debug.BuildSetting) string {
	var rev string
	var dirty bool
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" && dirty {
		rev += "-dirty"
	}
	return rev
}

// commitFromTag takes the abbreviated commit out of a version of
// hack/version.sh: "v1.2.3-4-gabc1234[-dirty]" (git describe) and
// "0.0.0-dev+abc1234[-dirty]" (no tag yet) give "abc1234[-dirty]", a bare
// "abc1234" (the older --always form) gives itself; anything else (a
// release tag, "0.0.0-dev+unknown") gives Unknown.
func commitFromTag(tag string) string {
	if tag == "" {
		return Unknown
	}
	base, dirty := strings.CutSuffix(tag, "-dirty")
	suffix := ""
	if dirty {
		suffix = "-dirty"
	}
	if i := strings.LastIndex(base, "-g"); i >= 0 && isHex(base[i+2:]) {
		return base[i+2:] + suffix
	}
	if _, sha, ok := strings.Cut(base, "+"); ok && isHex(sha) {
		return sha + suffix
	}
	if len(base) >= 7 && isHex(base) {
		return base + suffix
	}
	return Unknown
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}
