package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/internal/testutil"
)

// nodeTools are the programs chainvol-csi executes on a node; the image
// must carry every one of them.
var nodeTools = []string{"mount", "umount", "losetup", "blkid", "mkfs.ext4", "mkfs.xfs",
	"resize2fs", "xfs_growfs", "xfs_admin", "xfs_logprint", "fsck"}

// dockerfile is ../Dockerfile as logical instructions (continuations
// joined, runs of blanks collapsed, comments dropped).
func dockerfile(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	cur := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur == "") {
			continue
		}
		cur += " " + strings.TrimSuffix(line, "\\")
		if !strings.HasSuffix(line, "\\") {
			out = append(out, strings.Join(strings.Fields(cur), " "))
			cur = ""
		}
	}
	return out
}

// aptPackages are the packages the final stage installs.
var aptPackages = regexp.MustCompile(`apt-get install -y --no-install-recommends ((?:[a-z0-9.+-]+ ?)+)`)

// TestDockerfile checks the build stage compiles both binaries with the
// module cache mounted, and the runtime stage is debian:bookworm-slim with
// the node tools (verified at build time), an unprivileged user, and
// chainvol-csi as entrypoint running as root.
func TestDockerfile(t *testing.T) {
	ins := dockerfile(t)
	var froms []int
	for i, in := range ins {
		if strings.HasPrefix(in, "FROM ") {
			froms = append(froms, i)
		}
	}
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, have %d FROM", len(froms))
	}
	last := froms[len(froms)-1]
	if ins[last] != "FROM debian:bookworm-slim" {
		t.Errorf("runtime stage is %q, want FROM debian:bookworm-slim", ins[last])
	}
	build := strings.Join(ins[:last], "\n")
	for _, want := range []string{"--mount=type=cache,target=/go/pkg/mod", "go build", "./cmd/chainvol-csi", "./cmd/chainvolctl", "CGO_ENABLED=0"} {
		if !strings.Contains(build, want) {
			t.Errorf("build stage lacks %q", want)
		}
	}
	runtime := strings.Join(ins[last:], "\n")
	for _, tool := range nodeTools {
		if !regexp.MustCompile(`for tool in [^;]*\b` + regexp.QuoteMeta(tool) + `\b[^;]*;`).MatchString(runtime) {
			t.Errorf("runtime stage does not verify %s is installed", tool)
		}
	}
	if !strings.Contains(runtime, "useradd") {
		t.Error("runtime stage creates no unprivileged user for chainvolctl")
	}
	for _, in := range ins[last:] {
		if strings.HasPrefix(in, "USER ") && in != "USER root" && in != "USER 0" {
			t.Errorf("%q: chainvol-csi must run as root to mount", in)
		}
	}
	if !strings.Contains(runtime, `ENTRYPOINT ["/usr/local/bin/chainvol-csi"]`) {
		t.Error("entrypoint is not /usr/local/bin/chainvol-csi")
	}
	if aptPackages.FindStringSubmatch(runtime) == nil {
		t.Error("runtime stage installs no packages with --no-install-recommends")
	}
	ds, m := nodeDaemonSet(t)
	if img := container(&ds.Spec.Template.Spec, driverContainer).Image; img != scriptDefaultImage(t) {
		t.Errorf("%s runs %q, deploy/build-image.sh builds %q", m, img, scriptDefaultImage(t))
	}
}

// TestDockerfilePackagesProvideTools asks dpkg which Debian package owns
// each node tool on this host and requires the Dockerfile to install it.
// Only meaningful on Debian bookworm, the runtime image's release.
func TestDockerfilePackagesProvideTools(t *testing.T) {
	osr, err := os.ReadFile("/etc/os-release")
	if err != nil || !strings.Contains(string(osr), "VERSION_CODENAME=bookworm") {
		t.Skip("not a Debian bookworm host; package ownership would not match the image")
	}
	if _, err := exec.LookPath("dpkg"); err != nil {
		t.Skip("no dpkg")
	}
	m := aptPackages.FindStringSubmatch(strings.Join(dockerfile(t), "\n"))
	if m == nil {
		t.Fatal("no apt-get install in the Dockerfile")
	}
	installed := set(strings.Fields(m[1])...)
	for _, tool := range nodeTools {
		// dpkg records the path the package ships (/sbin/blkid), which on a
		// merged-/usr host is also reachable as /usr/sbin/blkid: ask for each.
		var out []byte
		present := false
		for _, dir := range []string{"/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
			p := filepath.Join(dir, tool)
			if _, err := os.Stat(p); err != nil {
				continue
			}
			present = true
			if o, err := exec.Command("dpkg", "-S", p).Output(); err == nil {
				out = o
				break
			}
		}
		if !present {
			testutil.SkipOrFail(t, tool+" is not installed on this host (make deps)")
		}
		if out == nil {
			t.Errorf("dpkg owns no path of %s", tool)
			continue
		}
		pkg, _, _ := strings.Cut(string(out), ":")
		if !installed[pkg] {
			t.Errorf("%s comes from package %s, which the Dockerfile does not install (%v)", tool, pkg, m[1])
		}
	}
}

// scriptDefaultImage reads IMAGE's default from deploy/build-image.sh.
func scriptDefaultImage(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("build-image.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^IMAGE="\$\{IMAGE:-([^}]+)\}"`).FindSubmatch(b)
	if m == nil {
		t.Fatal("build-image.sh sets no IMAGE default")
	}
	return string(m[1])
}
