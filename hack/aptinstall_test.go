package hack

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTools puts fake dpkg-query, dpkg, apt-get, systemctl and id first in
// PATH: jq and openssl are installed, etcd-server is not and ships
// etcd.service, which its postinst enables. Every call is logged to the
// returned file; apt-get also logs whether policy-rc.d forbids starts.
func fakeTools(t *testing.T, policy string) (env []string, logFile string) {
	t.Helper()
	dir := t.TempDir()
	logFile = filepath.Join(dir, "calls.log")
	state := filepath.Join(dir, "installed")
	if err := os.WriteFile(state, []byte("jq\nopenssl\nlibc6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	scripts := map[string]string{
		"dpkg-query": `if [ "$1" = -W ] && [ "$2" = "-f=\${Status}" ]; then grep -qx "$3" ` + state + ` && printf 'install ok installed'; exit 0; fi
cat ` + state,
		"dpkg": `[ "$2" = etcd-server ] && echo /lib/systemd/system/etcd.service; [ "$2" = libfoo ] && echo /usr/lib/libfoo.so; true`,
		"apt-get": `echo "apt-get $* policy=$(sh ` + policy + ` >/dev/null 2>&1; echo $?)" >> ` + logFile + `
if [ "$1" = install ]; then echo etcd-server >> ` + state + `; echo libfoo >> ` + state + `; echo enabled > ` + dir + `/etcd.state; fi`,
		"systemctl": `echo "systemctl $*" >> ` + logFile + `
case "$1" in disable) echo disabled > ` + dir + `/etcd.state;; is-enabled) cat ` + dir + `/etcd.state;; esac`,
		"id": `echo 0`,
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "POLICY_RC_D="+policy), logFile
}

// TestAptInstallChangesOnlyWhatIsMissing: hack/apt-install.sh (make deps,
// make e2e-cluster) names only missing packages to apt-get, with
// --no-upgrade, forbids service starts during the install, then disables
// the units the new packages ship and removes its policy-rc.d (issue 20:
// openssl, jq were upgraded and etcd, containerd left enabled at boot).
func TestAptInstallChangesOnlyWhatIsMissing(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "policy-rc.d")
	env, logFile := fakeTools(t, policy)
	cmd := exec.Command("bash", "apt-install.sh", "jq", "openssl", "etcd-server")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("apt-install.sh: %v\n%s", err, out)
	}
	calls, _ := os.ReadFile(logFile)
	log := string(calls)
	install := ""
	for _, l := range strings.Split(log, "\n") {
		if strings.HasPrefix(l, "apt-get install") {
			install = l
		}
	}
	if !strings.Contains(install, "--no-upgrade") || !strings.Contains(install, "etcd-server") ||
		strings.Contains(install, " jq") || strings.Contains(install, "openssl") || strings.Contains(install, "recommends") {
		t.Errorf("apt-get install call %q: want --no-upgrade and only the missing etcd-server\n%s", install, log)
	}
	if !strings.Contains(install, "policy=101") {
		t.Errorf("services could start during the install: %q", install)
	}
	if !strings.Contains(log, "systemctl disable --quiet etcd.service") {
		t.Errorf("etcd.service was not disabled:\n%s", log)
	}
	if _, err := os.Stat(policy); err == nil {
		t.Errorf("policy-rc.d left behind")
	}
	if !strings.Contains(string(out), "apt-get purge etcd-server libfoo") {
		t.Errorf("no removal command naming what was installed:\n%s", out)
	}

	// Nothing missing: no apt-get at all, no output.
	if err := os.Truncate(logFile, 0); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command("bash", "apt-install.sh", "jq", "openssl")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Errorf("with nothing missing: %v, output %q", err, out)
	}
	if calls, _ := os.ReadFile(logFile); strings.Contains(string(calls), "apt-get") {
		t.Errorf("apt-get ran with nothing missing:\n%s", calls)
	}
}

// TestAptInstallNoRecommends: a leading --no-install-recommends (make
// deps gives it for chromium) goes to apt-get install as its flag, not as a
// package name.
func TestAptInstallNoRecommends(t *testing.T) {
	env, logFile := fakeTools(t, filepath.Join(t.TempDir(), "policy-rc.d"))
	cmd := exec.Command("bash", "apt-install.sh", "--no-install-recommends", "jq", "etcd-server")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("apt-install.sh: %v\n%s", err, out)
	}
	calls, _ := os.ReadFile(logFile)
	if !strings.Contains(string(calls), "apt-get install -y -qq --no-upgrade --no-install-recommends etcd-server policy=") {
		t.Errorf("want one apt-get install of etcd-server with --no-install-recommends:\n%s", calls)
	}
}
