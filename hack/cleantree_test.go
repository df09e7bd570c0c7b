package hack

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// cleanClone is what a newcomer has after `git clone`: a clone of this
// repository into an empty directory, at a commit holding the working
// tree's tracked files (`git stash create`, so uncommitted edits are
// tested too; HEAD when there are none). No bin/, no build outputs, no
// tags beyond the repository's. Fast: --shared borrows the objects. New
// files count once git knows them (git add): stash create skips untracked.
func cleanClone(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	rev := gitIn(t, root, "stash", "create")
	if rev == "" {
		rev = "HEAD"
	}
	rev = gitIn(t, root, "rev-parse", rev)
	dir := filepath.Join(t.TempDir(), "clone")
	gitIn(t, root, "clone", "-q", "--shared", "--no-checkout", root, dir)
	gitIn(t, dir, "checkout", "-q", "--detach", rev)
	if _, err := os.Stat(filepath.Join(dir, "bin")); !os.IsNotExist(err) {
		t.Fatalf("the clone has a bin/ (%v); the test needs a clean tree", err)
	}
	return dir
}

// makeDryRun is `make -n ARGS` in dir: the commands a target would run.
func makeDryRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("make", append([]string{"--no-print-directory", "-n"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n %v in a fresh clone: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestTargetsResolveInCleanClone: every target's prerequisites exist or
// have a rule in a fresh clone (`make -n TARGET` succeeds for each), so no
// target reads a file only an earlier run leaves behind.
func TestTargetsResolveInCleanClone(t *testing.T) {
	dir := cleanClone(t)
	phony, _ := phonyTargets(t)
	for _, target := range phony {
		makeDryRun(t, dir, target)
	}
}

// fakeBin writes executables NAME -> shell body into a new directory.
func fakeBin(t *testing.T, scripts map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// imageBaseLine is the hack/image-base.sh command `make image` runs, from
// `make -n` in dir (so the test uses the Makefile's own output path).
func imageBaseLine(t *testing.T, dir string) (script, out string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^bash (hack/image-base\.sh) (\S+)$`).FindStringSubmatch(makeDryRun(t, dir, "-o", "build", "image"))
	if m == nil {
		t.Fatal("make -n image runs no 'bash hack/image-base.sh OUT'")
	}
	return m[1], m[2]
}

// TestImageBaseInCleanClone runs the hack/image-base.sh step of `make
// image` in a fresh clone (no bin/) with debootstrap, chroot and id faked:
// it must create OUT's directory, and when debootstrap fails, show the tail
// of a log that exists; when it succeeds, write OUT (issue 33: the log went
// to a bin/image/ nobody created, and the error named a log never written).
func TestImageBaseInCleanClone(t *testing.T) {
	dir := cleanClone(t)
	script, out := imageBaseLine(t, dir)
	if !strings.HasPrefix(out, filepath.Join(dir, "bin")+"/") {
		t.Fatalf("make image writes its base to %s, outside the clone's bin/", out)
	}
	run := func(debootstrap string) (string, error) {
		path := fakeBin(t, map[string]string{
			"debootstrap": debootstrap,
			"chroot":      "exit 0", // the tool checks and useradd inside the rootfs
			"id":          "echo 0",
		})
		cmd := exec.Command("bash", script, out)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+path+":"+os.Getenv("PATH"), "DEBIAN_MIRROR=http://mirror.invalid/debian")
		b, err := cmd.CombinedOutput()
		return string(b), err
	}

	msg, err := run(`echo "E: Failed getting release file $5/dists/$3/Release"; exit 1`)
	if err == nil {
		t.Fatalf("a failing debootstrap passed:\n%s", msg)
	}
	m := regexp.MustCompile(`the last lines of (\S+):`).FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("the failure names no log:\n%s", msg)
	}
	log, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatalf("the failure points at %s: %v", m[1], err)
	}
	const cause = "E: Failed getting release file http://mirror.invalid/debian/dists/bookworm/Release"
	if !strings.Contains(string(log), cause) || !strings.Contains(msg, cause) {
		t.Errorf("the log %s (%q) or the message (%q) lacks debootstrap's error", m[1], log, msg)
	}

	msg, err = run(`mkdir -p "$4/usr/bin" && echo base > "$4/usr/bin/marker"`)
	if err != nil {
		t.Fatalf("image-base with a working debootstrap: %v\n%s", err, msg)
	}
	tar, err := exec.Command("tar", "-tf", out).Output()
	if err != nil || !strings.Contains(string(tar), "./usr/bin/marker") {
		t.Errorf("%s: %v, lists %q; want the rootfs debootstrap made", out, err, tar)
	}
}

// gitIn runs git in dir and returns its trimmed output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestOneVersionInCleanClone: in a fresh clone the version of hack/version.sh
// is what make build links into the binaries, make image tags the image
// with ("+" as "_") and labels it with, and make image stamps into the
// overlays and the chart (hack/imagedeploy): 0.0.0-dev+COMMIT with no v*
// tag, git describe's form after one, -dirty with local edits (issue 33).
func TestOneVersionInCleanClone(t *testing.T) {
	dir := cleanClone(t)
	if tags := gitIn(t, dir, "tag", "-l"); tags != "" {
		gitIn(t, dir, append([]string{"tag", "-d"}, strings.Fields(tags)...)...)
	}
	short := gitIn(t, dir, "rev-parse", "--short=7", "HEAD")
	for _, c := range []struct {
		setup func()
		want  string
	}{
		{func() {}, "0.0.0-dev+" + short},
		{func() { gitIn(t, dir, "tag", "v1.2.3") }, "v1.2.3"},
		{func() {
			if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("edited\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "v1.2.3-dirty"},
	} {
		c.setup()
		out, err := exec.Command("bash", filepath.Join(dir, "hack/version.sh")).Output()
		if v := strings.TrimSpace(string(out)); err != nil || v != c.want {
			t.Errorf("hack/version.sh = %q, %v; want %q", v, err, c.want)
			continue
		}
		tag := strings.ReplaceAll(c.want, "+", "_")
		plan := makeDryRun(t, dir, "-B", "build", "image")
		for _, w := range []string{
			"pkg/version.tag=" + c.want + " ",                                            // make build: -version, GetPluginInfo, build_info
			"-tag ghcr.io/chainvol/chainvol-csi:" + tag + " ",                            // the image
			`-version "` + c.want + `"`,                                                  // its version label
			"-image ghcr.io/chainvol/chainvol-csi:" + tag + ` -version "` + c.want + `"`, // overlays, chart
		} {
			if !strings.Contains(plan, w) {
				t.Errorf("version %s: make -n build image lacks %q:\n%s", c.want, w, plan)
			}
		}
	}
}
