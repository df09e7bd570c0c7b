package cli

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/internal/testutil"
)

// demoS3 runs hack/demo-s3.sh (docs/operator.md's "Try it on S3 in five
// minutes" block) on a free port with doc as the document, and returns its
// output and exit code. It needs bin/versitygw and bin/chainvolctl.
func demoS3(t *testing.T, doc string) (string, int) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"versitygw", "chainvolctl"} {
		if _, err := os.Stat(filepath.Join(root, "bin", b)); err != nil {
			testutil.SkipOrFail(t, "bin/"+b+" is missing: run make deps build")
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("bash", filepath.Join(root, "hack", "demo-s3.sh"))
	cmd.Env = append(os.Environ(), "DEMO_S3_PORT="+strconv.Itoa(port), "DEMO_S3_DOC="+doc)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
		c.Close()
		t.Errorf("versitygw still listens on port %d after the demo", port)
	}
	return string(out), code
}

// TestDemoS3: the docs' S3 block runs as written and passes; the same block
// with the restored image altered before the comparison fails, saying so.
func TestDemoS3(t *testing.T) {
	doc, err := filepath.Abs("../../docs/operator.md")
	if err != nil {
		t.Fatal(err)
	}
	out, code := demoS3(t, doc)
	if code != 0 || !strings.Contains(out, "PASS:") || !strings.Contains(out, "incremental on") ||
		!strings.Contains(out, "2 backups: 2 OK, 0 failed") {
		t.Fatalf("demo-s3: exit %d\n%s", code, out)
	}

	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	const cmp = "cmp vol.img restored.img"
	if !strings.Contains(string(data), cmp) {
		t.Fatalf("docs/operator.md lost %q", cmp)
	}
	bad := filepath.Join(t.TempDir(), "operator.md")
	broken := strings.Replace(string(data), cmp, "printf x | dd of=restored.img bs=1 seek=70000000 conv=notrunc status=none; "+cmp, 1)
	if err := os.WriteFile(bad, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := demoS3(t, bad); code == 0 || !strings.Contains(out, "FAIL:") || strings.Contains(out, "PASS:") {
		t.Fatalf("demo-s3 with a restored image that differs: exit %d\n%s", code, out)
	}
}
