package deploy

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestImageBaseMatchesDockerfile: `make image` (hack/image-base.sh,
// debootstrap) and the Dockerfile (apt-get install) put the same Debian
// packages in the image and both verify the same node tools, and the
// Dockerfile stamps the version the way the Makefile does (issue 17: the
// two builds stay equivalent).
func TestImageBaseMatchesDockerfile(t *testing.T) {
	script, err := os.ReadFile("../hack/image-base.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`--include=(\S+)`).FindSubmatch(script)
	if m == nil {
		t.Fatal("hack/image-base.sh runs no debootstrap --include=")
	}
	fromScript := strings.Split(string(m[1]), ",")
	d := aptPackages.FindStringSubmatch(strings.Join(dockerfile(t), "\n"))
	if d == nil {
		t.Fatal("no apt-get install in the Dockerfile")
	}
	fromDockerfile := strings.Fields(d[1])
	slices.Sort(fromScript)
	slices.Sort(fromDockerfile)
	if !slices.Equal(fromScript, fromDockerfile) {
		t.Errorf("image-base.sh installs %v, the Dockerfile %v", fromScript, fromDockerfile)
	}
	checked := regexp.MustCompile(`for tool in ([^;]*);`).FindSubmatch(script)
	if checked == nil {
		t.Fatal("image-base.sh verifies no tools")
	}
	for _, tool := range nodeTools {
		if !slices.Contains(strings.Fields(string(checked[1])), tool) {
			t.Errorf("image-base.sh does not verify %s is in the rootfs", tool)
		}
	}
	df := strings.Join(dockerfile(t), "\n")
	for _, want := range []string{"pkg/version.tag=${VERSION}", "pkg/version.commit=${COMMIT}", `org.opencontainers.image.version="${VERSION}"`} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %s", want)
		}
	}
	if !strings.Contains(string(script), "useradd --system --uid 65532") || !strings.Contains(df, "--uid 65532") {
		t.Error("both images need the unprivileged user 65532 for chainvolctl")
	}
}
