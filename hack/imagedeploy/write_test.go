package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const (
	repo    = "ghcr.io/chainvol/chainvol-csi"
	version = "0.0.0-dev+abc1234-dirty"
	tag     = "0.0.0-dev_abc1234-dirty"
)

// build is `kubectl kustomize dir` with kustomize's own library.
func build(t *testing.T, dir string) string {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	y, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return string(y)
}

// images lists the image: values of a YAML stream.
func images(stream string) []string {
	var out []string
	for _, l := range strings.Split(stream, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "image: "); ok {
			out = append(out, strings.Trim(v, `"`))
		}
	}
	return out
}

// TestWrite: after make image's imagedeploy step, every kustomization of
// deploy/ that runs the driver's image has an overlay under bin/image that
// kustomize builds with the built tag and no other tag of the image, the
// stamped chart renders that image with appVersion and labels of the same
// version, and the printed lines name the tarball, the overlays and the
// chart (issue 33: deploy/ ran :latest after make image built a commit).
func TestWrite(t *testing.T) {
	out := t.TempDir()
	text, err := Write(Options{Image: repo + ":" + tag, Version: version, Tarball: filepath.Join(out, "img.tar"),
		DeployDir: "../../deploy", ChartDir: "../../charts/chainvol", Out: out})
	if err != nil {
		t.Fatal(err)
	}
	// Which kustomizations run the image, found independently: build each.
	var want []string
	kusts, _ := filepath.Glob("../../deploy/*/kustomization.yaml")
	more, _ := filepath.Glob("../../deploy/examples/*/kustomization.yaml")
	for _, k := range append(kusts, more...) {
		dir := filepath.Dir(k)
		for _, img := range images(build(t, dir)) {
			if strings.HasPrefix(img, repo+":") {
				rel, _ := filepath.Rel("../../deploy", dir)
				want = append(want, filepath.ToSlash(rel))
				break
			}
		}
	}
	slices.Sort(want)
	for _, must := range []string{"base", "examples/s3", "examples/scheduled-backup"} {
		if !slices.Contains(want, must) {
			t.Errorf("deploy/%s does not run %s any more; update the docs that say it does", must, repo)
		}
	}
	got, err := ImageKustomizations("../../deploy", repo)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("ImageKustomizations = %v, %v; building every kustomization says %v", got, err, want)
	}
	for _, d := range want {
		overlay := filepath.Join(out, "deploy", d)
		n := 0
		for _, img := range images(build(t, overlay)) {
			if strings.HasPrefix(img, repo+":") {
				n++
				if img != repo+":"+tag {
					t.Errorf("%s runs %s, want %s:%s", overlay, img, repo, tag)
				}
			}
		}
		if n == 0 {
			t.Errorf("%s runs no %s", overlay, repo)
		}
		if !strings.Contains(text, "kubectl apply -k "+overlay+"\n") {
			t.Errorf("the instructions lack kubectl apply -k %s:\n%s", overlay, text)
		}
	}
	chart := filepath.Join(out, "chart", "chainvol")
	for _, line := range []string{"ctr -n k8s.io images import " + filepath.Join(out, "img.tar") + "\n",
		"helm install chainvol " + chart + " -n chainvol-system\n", "go run ./hack/helmtemplate -n chainvol-system " + chart + " |"} {
		if !strings.Contains(text, line) {
			t.Errorf("the instructions lack %q:\n%s", line, text)
		}
	}
	if b, err := os.ReadFile(filepath.Join(out, "install.txt")); err != nil || string(b) != text {
		t.Errorf("install.txt: %v, %q", err, b)
	}
	checkChart(t, chart)
	checkDocs(t, want)
}

// checkDocs: docs/deploy.md shows make image's lines for every overlay and
// the chart, and README.md's install section the base overlay, so the docs
// name what make image writes.
func checkDocs(t *testing.T, overlays []string) {
	t.Helper()
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	deploy, readme := read("../../docs/deploy.md"), read("../../README.md")
	for _, d := range overlays {
		if !strings.Contains(deploy, "kubectl apply -k bin/image/deploy/"+d+"\n") {
			t.Errorf("docs/deploy.md does not show kubectl apply -k bin/image/deploy/%s", d)
		}
	}
	for _, w := range []string{"helm install chainvol bin/image/chart/chainvol -n chainvol-system", "ctr -n k8s.io images import "} {
		if !strings.Contains(deploy, w) {
			t.Errorf("docs/deploy.md does not show %q", w)
		}
	}
	if !strings.Contains(readme, "kubectl apply -k bin/image/deploy/base") {
		t.Error("README.md's install section does not apply bin/image/deploy/base")
	}
}

// checkChart renders the stamped chart as helm would and checks its
// appVersion, the driver's image and every object's version label.
func checkChart(t *testing.T, dir string) {
	t.Helper()
	ch, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.AppVersion != version {
		t.Errorf("appVersion %q, want %q", ch.Metadata.AppVersion, version)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*_test.go")); len(m) > 0 {
		t.Errorf("the chart carries Go test files (%v): go ./... would build them under bin/", m)
	}
	vals, err := chartutil.ToRenderValues(ch, nil, chartutil.ReleaseOptions{Name: "chainvol", Namespace: "chainvol-system", IsInstall: true},
		chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, f := range files {
		all.WriteString(f + "\n---\n")
	}
	if imgs := images(all.String()); !slices.Contains(imgs, repo+":"+tag) {
		t.Errorf("the stamped chart runs %v, want %s:%s", imgs, repo, tag)
	}
	labels := 0
	for _, doc := range strings.Split(all.String(), "\n---\n") {
		var o struct {
			Metadata struct{ Labels map[string]string }
		}
		if yaml.Unmarshal([]byte(doc), &o) != nil || o.Metadata.Labels == nil {
			continue
		}
		labels++
		if v := o.Metadata.Labels["app.kubernetes.io/version"]; v != tag {
			t.Errorf("app.kubernetes.io/version %q, want %q (the image tag)", v, tag)
		}
	}
	if labels == 0 {
		t.Error("no labelled object rendered")
	}
}
