package deploy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// flagInfo is one flag as chainvol-csi -h prints it (Go's flag package
// format): its name, the type word ("" for a bool) and its default value
// ("" when the usage shows none).
type flagInfo struct {
	Name, Type, Default string
}

var (
	usageHeader  = regexp.MustCompile(`^  -([^\s=]+)(?: ([^\s]+))?(?:\t.*)?$`)
	usageDefault = regexp.MustCompile(`\(default (.*)\)\s*$`)
)

// parseUsage reads the flag list printed by flag.FlagSet.PrintDefaults: a
// header line "  -name type" (or "  -x\tusage" for one-letter bools), then
// indented usage lines, the last one ending in "(default ...)" when the
// default is not the zero value.
func parseUsage(out string) map[string]flagInfo {
	flags := map[string]flagInfo{}
	var cur *flagInfo
	var text []string
	flush := func() {
		if cur == nil {
			return
		}
		if m := usageDefault.FindStringSubmatch(strings.Join(text, " ")); m != nil {
			cur.Default = m[1]
			if s, err := strconv.Unquote(m[1]); err == nil {
				cur.Default = s
			}
		}
		flags[cur.Name] = *cur
	}
	for _, line := range strings.Split(out, "\n") {
		if m := usageHeader.FindStringSubmatch(line); m != nil {
			flush()
			cur, text = &flagInfo{Name: m[1], Type: m[2]}, nil
			if i := strings.Index(line, "\t"); i >= 0 {
				text = append(text, line[i+1:])
			}
			continue
		}
		if cur != nil && strings.HasPrefix(line, "    \t") {
			text = append(text, strings.TrimSpace(line))
		}
	}
	flush()
	return flags
}

var binary struct {
	once  sync.Once
	dir   string
	flags map[string]flagInfo
	err   error
}

// TestMain removes the temporary directory the chainvol-csi binary is
// built into.
func TestMain(m *testing.M) {
	code := m.Run()
	if binary.dir != "" {
		os.RemoveAll(binary.dir)
	}
	os.Exit(code)
}

// driverFlags builds ./cmd/chainvol-csi from this tree, runs it with -h and
// returns its flags. A tree where the binary does not build fails the test:
// the manifests cannot be checked against a driver that does not exist.
func driverFlags(t *testing.T) map[string]flagInfo {
	t.Helper()
	binary.once.Do(func() { binary.flags, binary.err = buildAndAsk() })
	if binary.err != nil {
		t.Fatalf("chainvol-csi flags unavailable: %v", binary.err)
	}
	return binary.flags
}

// buildAndAsk builds the binary, unless CHAINVOL_CSI_BIN names one already
// built from this tree (make build's bin/chainvol-csi), and parses its -h.
func buildAndAsk() (map[string]flagInfo, error) {
	bin := os.Getenv("CHAINVOL_CSI_BIN")
	if bin == "" {
		dir, err := os.MkdirTemp("", "chainvol-deploy-test-")
		if err != nil {
			return nil, err
		}
		binary.dir = dir
		bin = filepath.Join(dir, "chainvol-csi")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		build := exec.CommandContext(ctx, goTool(), "build", "-o", bin, "./cmd/chainvol-csi")
		build.Dir = ".."
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build ./cmd/chainvol-csi: %v\n%s", err, out)
		}
	}
	hctx, hcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer hcancel()
	// -h exits 0 (flag.ErrHelp) or 2 depending on the FlagSet's error
	// handling; what matters is the printed list.
	out, _ := exec.CommandContext(hctx, bin, "-h").CombinedOutput()
	flags := parseUsage(string(out))
	if len(flags) == 0 {
		return nil, fmt.Errorf("chainvol-csi -h printed no flags:\n%s", out)
	}
	return flags, nil
}

// goTool is the go command running this test, found on PATH or in GOROOT.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}
