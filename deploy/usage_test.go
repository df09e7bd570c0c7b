package deploy

import (
	"bytes"
	"flag"
	"strings"
	"testing"
	"time"
)

// TestParseUsage feeds parseUsage what Go's own flag package prints, so the
// parser follows the real format rather than a hand-written sample.
func TestParseUsage(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("endpoint", "unix:///csi/csi.sock", "CSI `endpoint`")
	fs.String("node-id", "", "node id (required)")
	fs.Bool("debug", false, "debug mode")
	fs.Bool("q", false, "quiet, one-letter bool")
	fs.Int64("max-volumes-per-node", 0, "limit; 0 = unlimited")
	fs.Int("retries", 3, "how many\nmultiple lines")
	fs.Duration("timeout", 30*time.Second, "timeout")
	fs.Func("backup-target", "NAME=URL, repeatable", func(string) error { return nil })
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	fs.PrintDefaults()

	got := parseUsage("Usage of x:\n" + buf.String())
	want := map[string]flagInfo{
		"endpoint":             {"endpoint", "endpoint", "unix:///csi/csi.sock"},
		"node-id":              {"node-id", "string", ""},
		"debug":                {"debug", "", ""},
		"q":                    {"q", "", ""},
		"max-volumes-per-node": {"max-volumes-per-node", "int", ""},
		"retries":              {"retries", "int", "3"},
		"timeout":              {"timeout", "duration", "30s"},
		"backup-target":        {"backup-target", "value", ""},
	}
	if len(got) != len(want) {
		t.Errorf("parsed %d flags, want %d:\n%s\n%v", len(got), len(want), buf.String(), got)
	}
	for name, w := range want {
		if g := got[name]; g != w {
			t.Errorf("%s: got %+v, want %+v", name, g, w)
		}
	}
	if strings.Contains(buf.String(), "Usage") {
		t.Fatal("PrintDefaults output unexpectedly contains a Usage line")
	}
}

// TestDriverBinaryFlags checks the chainvol-csi built from this tree prints
// the flags the manifests and docs rely on, with the documented defaults.
func TestDriverBinaryFlags(t *testing.T) {
	flags := driverFlags(t)
	want := map[string]string{
		"endpoint":    "unix:///csi/csi.sock",
		"pool-dir":    "/var/lib/chainvol/pool",
		"state-dir":   "/var/lib/chainvol",
		"driver-name": "chainvol.csi.io",
	}
	for name, def := range want {
		f, ok := flags[name]
		if !ok {
			t.Errorf("chainvol-csi has no -%s", name)
		} else if f.Default != def {
			t.Errorf("-%s default %q, docs/deploy.md says %q", name, f.Default, def)
		}
	}
	for _, name := range []string{"node-id", "backup-target", "backup-credentials-file", "metrics-address", "max-volumes-per-node", "v"} {
		if _, ok := flags[name]; !ok {
			t.Errorf("chainvol-csi has no -%s", name)
		}
	}
}
