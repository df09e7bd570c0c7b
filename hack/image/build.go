package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/chainvol/chainvol/internal/durable"
)

// Spec describes the image to build.
type Spec struct {
	BaseTar  string   // uncompressed tar of the base filesystem
	Binaries []string // static binaries for /usr/local/bin; the first is the entrypoint
	Tag      string   // image reference, REGISTRY/REPO:TAG
	Version  string   // org.opencontainers.image.version
	Commit   string   // org.opencontainers.image.revision
	Arch     string   // GOARCH of the binaries
}

// BinDir is where the binaries go in the image.
const BinDir = "/usr/local/bin"

// Source is the org.opencontainers.image.source label.
const Source = "https://github.com/chainvol/chainvol"

// Build assembles the image: the base layer, the binaries' layer and an
// OCI config (entrypoint, PATH, labels). Times are the Unix epoch so that
// the same inputs give the same digests. Errors: unreadable inputs, a bad
// tag.
func Build(s Spec) (v1.Image, error) {
	if _, err := name.NewTag(s.Tag); err != nil {
		return nil, fmt.Errorf("tag %q: %w", s.Tag, err)
	}
	base, err := tarball.LayerFromFile(s.BaseTar, tarball.WithCompressionLevel(gzip.BestSpeed),
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("base layer %s: %w", s.BaseTar, err)
	}
	binTar, err := binariesTar(s.Binaries)
	if err != nil {
		return nil, err
	}
	bins, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(binTar)), nil },
		tarball.WithCompressionLevel(gzip.BestSpeed), tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, base, bins); err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", s.Arch
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.Entrypoint = []string{filepath.Join(BinDir, filepath.Base(s.Binaries[0]))}
	cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":       "chainvol-csi",
		"org.opencontainers.image.description": "chainvol CSI node plugin, chainvolctl and chainvol-populator",
		"org.opencontainers.image.source":      Source,
		"org.opencontainers.image.version":     s.Version,
		"org.opencontainers.image.revision":    s.Commit,
		"org.opencontainers.image.base.name":   "debian:bookworm (debootstrap minbase)",
	}
	return mutate.ConfigFile(img, cf)
}

// binariesTar is an uncompressed tar of the binaries under BinDir, mode
// 0755, owned by root, with the epoch as mtime.
func binariesTar(paths []string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := []string{"usr/", "usr/local/", "usr/local/bin/"}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: time.Unix(0, 0)}); err != nil {
			return nil, err
		}
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("binary: %w", err)
		}
		h := &tar.Header{Name: "usr/local/bin/" + filepath.Base(p), Typeflag: tar.TypeReg, Mode: 0o755,
			Size: int64(len(data)), ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write saves img as a docker-archive tarball at out, tagged tag, and,
// when layoutDir is not "", as an OCI image layout there (replacing what
// was there) with the tag in the org.opencontainers.image.ref.name and
// io.containerd.image.name annotations.
func Write(img v1.Image, tag, out, layoutDir string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	err = durable.WriteWith(out, 0o644, func(w io.Writer) error { return tarball.Write(ref, img, w) })
	if err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	if layoutDir == "" {
		return nil
	}
	if err := os.RemoveAll(layoutDir); err != nil {
		return err
	}
	p, err := layout.Write(layoutDir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.TagStr(),
		"io.containerd.image.name":          ref.Name(),
	}))
}
