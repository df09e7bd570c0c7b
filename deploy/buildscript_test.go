package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// runBuildScript runs build-image.sh with DOCKER set to docker and returns
// its output and exit code.
func runBuildScript(t *testing.T, docker string) (string, int) {
	t.Helper()
	cmd := exec.Command("bash", "build-image.sh")
	cmd.Env = append(os.Environ(), "DOCKER="+docker, "IMAGE=example.test/chainvol:t1", "DOCKER_BUILD_ARGS=")
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// stubDocker writes a fake docker CLI that logs each call (arguments and
// DOCKER_BUILDKIT) to a file and answers `info` and `build` with the given
// exit codes. No Docker engine exists here; the stub stands in for the
// engine's two answers the script branches on.
func stubDocker(t *testing.T, infoCode, buildCode int) (bin, log string) {
	t.Helper()
	dir := t.TempDir()
	bin, log = filepath.Join(dir, "docker"), filepath.Join(dir, "calls")
	script := "#!/bin/sh\necho \"BUILDKIT=$DOCKER_BUILDKIT $*\" >> " + log + "\n" +
		"case \"$1\" in info) exit " + strconv.Itoa(infoCode) + ";; build) exit " + strconv.Itoa(buildCode) + ";; esac\nexit 99\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, log
}

// TestBuildImageScript covers the script's three outcomes: no docker CLI
// and no engine both exit 0 with a clear message and build nothing; an
// engine builds the Dockerfile at the repository root with BuildKit, and a
// failing build fails the script.
func TestBuildImageScript(t *testing.T) {
	out, code := runBuildScript(t, filepath.Join(t.TempDir(), "no-such-docker"))
	if code != 0 || !strings.Contains(out, "no Docker engine available") {
		t.Errorf("without a docker CLI: exit %d, output %q", code, out)
	}

	bin, log := stubDocker(t, 1, 0)
	out, code = runBuildScript(t, bin)
	calls, _ := os.ReadFile(log)
	if code != 0 || !strings.Contains(out, "no Docker engine available") || strings.Contains(string(calls), "build") {
		t.Errorf("engine down: exit %d, output %q, calls %q", code, out, calls)
	}

	bin, log = stubDocker(t, 0, 0)
	out, code = runBuildScript(t, bin)
	calls, _ = os.ReadFile(log)
	root, _ := filepath.Abs("..")
	want := "BUILDKIT=1 build -t example.test/chainvol:t1 -f " + filepath.Join(root, "Dockerfile") + " " + root
	if code != 0 || !strings.Contains(string(calls), want) {
		t.Errorf("engine up: exit %d, output %q\ncalls %q\nwant a call %q", code, out, calls, want)
	}

	bin, _ = stubDocker(t, 0, 3)
	if out, code = runBuildScript(t, bin); code != 3 {
		t.Errorf("failing build: exit %d, want 3; output %q", code, out)
	}
}
