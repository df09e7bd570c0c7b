package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// fakeRootfs writes a tiny base filesystem tar (an /etc/os-release and a
// /bin/sh stand-in) and two fake binaries.
func fakeInputs(t *testing.T) (base string, bins []string) {
	t.Helper()
	dir := t.TempDir()
	base = filepath.Join(dir, "base.tar")
	f, err := os.Create(base)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	for name, body := range map[string]string{"etc/os-release": "ID=debian\n", "bin/sh": "#!fake\n"} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, b := range []string{"chainvol-csi", "chainvolctl"} {
		p := filepath.Join(dir, b)
		if err := os.WriteFile(p, []byte("binary "+b), 0o755); err != nil {
			t.Fatal(err)
		}
		bins = append(bins, p)
	}
	return base, bins
}

// TestBuildImage builds the image from a fake rootfs and reads it back as
// an engine would: from the docker-archive by its tag and from the OCI
// layout by its ref.name annotation. Config: entrypoint chainvol-csi, PATH,
// the version labels, linux/amd64, OCI media types; layers: the base's
// files and the binaries in /usr/local/bin, mode 0755; the same inputs
// give the same digest (reproducible).
func TestBuildImage(t *testing.T) {
	base, bins := fakeInputs(t)
	spec := Spec{BaseTar: base, Binaries: bins, Tag: "ghcr.io/chainvol/chainvol-csi:v9.8.7-1-gabc1234", Version: "v9.8.7-1-gabc1234",
		Commit: "abc1234", Arch: "amd64"}
	img, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, lay := filepath.Join(dir, "img.tar"), filepath.Join(dir, "oci")
	if err := Write(img, spec.Tag, out, lay); err != nil {
		t.Fatal(err)
	}
	ref, _ := name.NewTag(spec.Tag)
	loaded, err := tarball.ImageFromPath(out, &ref)
	if err != nil {
		t.Fatalf("the tarball has no image tagged %s: %v", spec.Tag, err)
	}
	cf, err := loaded.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/usr/local/bin/chainvol-csi"}) || cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("config: entrypoint %v, platform %s/%s", cf.Config.Entrypoint, cf.OS, cf.Architecture)
	}
	if l := cf.Config.Labels; l["org.opencontainers.image.version"] != spec.Version || l["org.opencontainers.image.revision"] != "abc1234" ||
		l["org.opencontainers.image.source"] != Source {
		t.Errorf("labels %v", l)
	}
	if !slices.Contains(cf.Config.Env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin") {
		t.Errorf("env %v", cf.Config.Env)
	}
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s", mt)
	}
	files := map[string]int64{}
	tr := tar.NewReader(mutate.Extract(loaded))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h.Mode
	}
	for _, f := range []string{"etc/os-release", "bin/sh", "usr/local/bin/chainvol-csi", "usr/local/bin/chainvolctl"} {
		if _, ok := files[f]; !ok {
			t.Errorf("image filesystem lacks %s (has %v)", f, files)
		}
	}
	if files["usr/local/bin/chainvol-csi"] != 0o755 {
		t.Errorf("chainvol-csi mode %o", files["usr/local/bin/chainvol-csi"])
	}

	p, err := layout.FromPath(lay)
	if err != nil {
		t.Fatal(err)
	}
	idx, _ := p.ImageIndex()
	im, _ := idx.IndexManifest()
	if len(im.Manifests) != 1 || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v9.8.7-1-gabc1234" {
		t.Errorf("OCI layout index %+v", im.Manifests)
	}
	want, _ := img.Digest()
	if im.Manifests[0].Digest != want {
		t.Errorf("layout digest %s, image %s", im.Manifests[0].Digest, want)
	}
	again, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := again.Digest(); d != want {
		t.Errorf("not reproducible: %s then %s", want, d)
	}
}

// TestBuildRefusesBadTag: a tag that is no image reference fails before
// any work.
func TestBuildRefusesBadTag(t *testing.T) {
	base, bins := fakeInputs(t)
	if _, err := Build(Spec{BaseTar: base, Binaries: bins, Tag: "Not A Tag", Arch: "amd64"}); err == nil {
		t.Fatal("a bad tag was accepted")
	}
}
