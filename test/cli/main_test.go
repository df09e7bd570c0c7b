// Package cli tests the chainvolctl binary as an operator runs it: built
// with go build, run as a process, its output parsed and its exit code
// checked, against a local file:// target and a real S3 server.
package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// binary is the chainvolctl built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chainvolctl-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "chainvolctl")
	out, err := exec.Command("go", "build", "-o", binary, "github.com/chainvol/chainvol/cmd/chainvolctl").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build chainvolctl: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is one run of the binary.
type result struct {
	stdout, stderr string
	code           int
}

// ctl runs chainvolctl with a clean CHAINVOL_* environment plus env.
type ctl struct {
	t   testing.TB
	env []string
	// secrets must never appear in any output.
	secrets []string
}

func (c *ctl) run(args ...string) result {
	c.t.Helper()
	cmd := exec.Command(binary, args...)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "CHAINVOL_") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, c.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		c.t.Fatalf("run chainvolctl %v: %v", args, err)
	}
	for _, s := range c.secrets {
		if strings.Contains(r.stdout+r.stderr, s) {
			c.t.Fatalf("chainvolctl %v printed a secret", args)
		}
	}
	if l := repeatedPrefix(r.stderr); l != "" {
		c.t.Errorf("chainvolctl %v: the error repeats its prefix: %q", args, l)
	}
	return r
}

// repeatedPrefix returns the first "Error: " line of stderr whose first two
// ": "-separated parts start with the same word, as in "verify x@b: verify
// backup ...": every error of every test run is checked (issue 20).
func repeatedPrefix(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		msg, ok := strings.CutPrefix(l, "Error: ")
		if !ok {
			continue
		}
		if parts := strings.SplitN(msg, ": ", 3); len(parts) >= 2 && firstWord(parts[0]) == firstWord(parts[1]) {
			return l
		}
	}
	return ""
}

func firstWord(s string) string {
	w, _, _ := strings.Cut(strings.TrimSpace(s), " ")
	return strings.ToLower(strings.Trim(w, `"'`))
}

// ok runs a command that must succeed and returns its stdout.
func (c *ctl) ok(args ...string) string {
	c.t.Helper()
	r := c.run(args...)
	if r.code != 0 {
		c.t.Fatalf("chainvolctl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// fails runs a command that must exit with code and returns its stderr.
func (c *ctl) fails(code int, args ...string) string {
	c.t.Helper()
	r := c.run(args...)
	if r.code != code {
		c.t.Fatalf("chainvolctl %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r.stderr
}
