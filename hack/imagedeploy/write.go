package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// Options are imagedeploy's inputs; paths are relative to the working
// directory (the repository root under make) or absolute.
type Options struct {
	Image     string // REPOSITORY:TAG, as built
	Version   string // e.g. v0.3.0-4-gabc1234 or 0.0.0-dev+abc1234
	Tarball   string // the docker-archive make image wrote
	DeployDir string // deploy
	ChartDir  string // charts/chainvol
	Out       string // bin/image
}

// Write writes the overlays, the stamped chart and install.txt under
// o.Out (replacing earlier ones) and returns the instructions it printed
// there. Errors: a reference without a tag, an unreadable deploy tree or
// chart, a write failure.
func Write(o Options) (string, error) {
	ref, err := name.NewTag(o.Image, name.StrictValidation)
	if err != nil {
		return "", fmt.Errorf("-image %q: %w (want REPOSITORY:TAG)", o.Image, err)
	}
	repo := ref.Context().String()
	dirs, err := ImageKustomizations(o.DeployDir, repo)
	if err != nil {
		return "", err
	}
	overlays := filepath.Join(o.Out, "deploy")
	if err := os.RemoveAll(overlays); err != nil {
		return "", err
	}
	var written []string
	for _, d := range dirs {
		p, err := writeOverlay(overlays, o.DeployDir, d, repo, ref.TagStr(), o.Version)
		if err != nil {
			return "", err
		}
		written = append(written, p)
	}
	chart, err := writeChart(o.ChartDir, filepath.Join(o.Out, "chart"), o.Version)
	if err != nil {
		return "", err
	}
	text := instructions(o, written, chart)
	return text, os.WriteFile(filepath.Join(o.Out, "install.txt"), []byte(text), 0o644)
}

// writeOverlay writes OUT/DIR/kustomization.yaml: deploy/DIR with the
// image's tag, and returns its directory.
func writeOverlay(out, deployDir, dir, repo, tag, version string) (string, error) {
	at := filepath.Join(out, dir)
	if err := os.MkdirAll(at, 0o755); err != nil {
		return "", err
	}
	src, err := filepath.Abs(filepath.Join(deployDir, dir))
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(at)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(abs, src)
	if err != nil {
		return "", err
	}
	body := fmt.Sprintf(`# Written by make image (hack/imagedeploy): %s
# running %s:%s, the image built from version %s.
# kubectl apply -k this directory; make image rewrites it.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
images:
  - name: %s
    newTag: %q
`, filepath.ToSlash(filepath.Join(filepath.Base(filepath.Clean(deployDir)), dir)), repo, tag, version, filepath.ToSlash(rel), repo, tag)
	return at, os.WriteFile(filepath.Join(at, "kustomization.yaml"), []byte(body), 0o644)
}

// writeChart saves the chart at src under out (out/NAME, replaced) with
// appVersion set to version, and returns that directory.
func writeChart(src, out, version string) (string, error) {
	ch, err := loader.Load(src)
	if err != nil {
		return "", err
	}
	ch.Metadata.AppVersion = version
	dir := filepath.Join(out, ch.Name())
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	return dir, chartutil.SaveDir(ch, out)
}

// instructions are the commands that import and install the image.
func instructions(o Options, overlays []string, chart string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Built %s (version %s). On each node, import it into containerd:\n", o.Image, o.Version)
	fmt.Fprintf(&b, "  ctr -n k8s.io images import %s\n", abs(o.Tarball))
	fmt.Fprintf(&b, "Then install it with kustomize, one of:\n")
	for _, d := range overlays {
		fmt.Fprintf(&b, "  kubectl apply -k %s\n", rel(d))
	}
	fmt.Fprintf(&b, "or with the chart (appVersion %s), into a namespace that admits privileged pods:\n", o.Version)
	fmt.Fprintf(&b, "  kubectl create namespace chainvol-system\n")
	fmt.Fprintf(&b, "  kubectl label namespace chainvol-system pod-security.kubernetes.io/enforce=privileged\n")
	fmt.Fprintf(&b, "  helm install chainvol %s -n chainvol-system\n", rel(chart))
	fmt.Fprintf(&b, "  go run ./hack/helmtemplate -n chainvol-system %s | kubectl apply -f -   # without helm\n", rel(chart))
	return b.String()
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// rel is p relative to the working directory when under it, else absolute.
func rel(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return abs(p)
	}
	r, err := filepath.Rel(wd, abs(p))
	if err != nil || strings.HasPrefix(r, "..") {
		return abs(p)
	}
	return r
}
