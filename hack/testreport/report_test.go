package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// verdictLine is the form CI reads (issue 20): one optional word with a
// colon, then "N passed, N failed", optionally ", N skipped", alone on a line.
var verdictLine = regexp.MustCompile(`^(\w+: )?(\d+) passed, (\d+) failed(, (\d+) skipped)?$`)

// scratch writes a module with a passing, a skipped, a failing (subtest)
// and a Ginkgo-like test, and returns the `go test -json` output.
func scratch(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module scratch\n\ngo 1.22\n",
		"a/a_test.go": `package a
import ("fmt"; "testing")
func TestPass(t *testing.T) {}
func TestSkip(t *testing.T) { t.Skip("not here") }
func TestParent(t *testing.T) {
	t.Run("good", func(t *testing.T) {})
	t.Run("bad", func(t *testing.T) { t.Log("the reason it failed"); t.Fail() })
}
func TestGinkgo(t *testing.T) {
	fmt.Println("Ran 77 of 103 Specs in 95.1 seconds")
	fmt.Println("\x1b[1mSUCCESS!\x1b[0m -- 77 Passed | 0 Failed | 1 Pending | 25 Skipped")
}
`,
		"b/b_test.go": "package b\nimport \"testing\"\nfunc TestMain(m *testing.M) { panic(\"setup broke\") }\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "test", "-json", "-count=1", "./...")
	cmd.Dir = dir
	out, _ := cmd.Output() // fails: TestParent/bad and package b
	return out
}

// TestReportCounts: counts come from the events, failing leaf tests show
// their output, a package failing outside any test counts once, Ginkgo's
// summary is surfaced, and the verdict has the form CI reads.
func TestReportCounts(t *testing.T) {
	var buf bytes.Buffer
	r := newReport("unit", &buf)
	r.read(bytes.NewReader(scratch(t)))
	out := buf.String()
	// TestPass, TestParent/good, TestGinkgo pass; TestParent/bad and
	// TestParent fail, and package b; TestSkip is skipped.
	if want := (counts{passed: 3, failed: 3, skipped: 1}); r.c != want {
		t.Errorf("counts = %+v, want %+v\n%s", r.c, want, out)
	}
	for _, want := range []string{
		"--- FAIL scratch/a TestParent/bad", "the reason it failed", "setup broke",
		"TestGinkgo: Ginkgo 77 passed, 0 failed, 1 pending, 25 skipped", "Ginkgo ran 77 of 103 specs",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "--- FAIL scratch/a TestParent ") {
		t.Errorf("the parent of a failed subtest repeats its output:\n%s", out)
	}
	if v := r.c.verdict("unit"); !verdictLine.MatchString(v) {
		t.Errorf("verdict %q does not have the form CI reads", v)
	}
}

// TestProgress: while a package runs, the progress line names it.
func TestProgress(t *testing.T) {
	var buf bytes.Buffer
	r := newReport("sanity", &buf)
	r.line([]byte(`{"Action":"start","Package":"github.com/chainvol/chainvol/test/sanity"}`))
	r.line([]byte(`{"Action":"pass","Package":"github.com/chainvol/chainvol/test/sanity","Test":"TestA"}`))
	got := r.progress(time.Now().Add(95 * time.Second))
	if !strings.Contains(got, "test/sanity 1m35s") || !strings.Contains(got, "1 passed") {
		t.Errorf("progress = %q", got)
	}
	r.line([]byte(`{"Action":"pass","Package":"github.com/chainvol/chainvol/test/sanity","Elapsed":95}`))
	if got := r.progress(time.Now()); got != "" {
		t.Errorf("progress after the last package = %q, want none", got)
	}
}
