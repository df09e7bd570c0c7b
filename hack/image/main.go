// Command image builds chainvol's node-plugin image without a container
// engine or registry, with go-containerregistry: a base filesystem layer
// (a tar made by hack/image-base.sh from Debian packages) plus a layer with
// the static chainvol-csi and chainvolctl in /usr/local/bin, an OCI config
// whose entrypoint is chainvol-csi, and OCI labels naming the version.
// It writes a docker-archive tarball (for `ctr -n k8s.io images import`,
// `docker load`, `podman load`, `kind load image-archive`, `crane push`)
// and, with -layout, an OCI image layout directory. `make image` runs it;
// see docs/deploy.md "Building the image".
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	var spec Spec
	var bins []string
	flag.StringVar(&spec.BaseTar, "base", "", "tar of the base filesystem (hack/image-base.sh)")
	flag.Func("bin", "a static binary to put in /usr/local/bin (repeatable); the first is the entrypoint", func(v string) error {
		bins = append(bins, v)
		return nil
	})
	flag.StringVar(&spec.Tag, "tag", "", "image reference, e.g. ghcr.io/chainvol/chainvol-csi:v1.2.3")
	flag.StringVar(&spec.Version, "version", "", "version for the org.opencontainers.image.version label")
	flag.StringVar(&spec.Commit, "commit", "", "commit for the org.opencontainers.image.revision label")
	flag.StringVar(&spec.Arch, "arch", "amd64", "the binaries' GOARCH")
	out := flag.String("out", "", "docker-archive tarball to write")
	layoutDir := flag.String("layout", "", "also write an OCI image layout directory here (replaced)")
	check := flag.String("check", "", "instead of building: check the tarball at this path (needs -tag and -version; root)")
	flag.Parse()
	if *check != "" {
		if err := Check(*check, spec.Tag, spec.Version); err != nil {
			fmt.Fprintln(os.Stderr, "image-check:", err)
			os.Exit(1)
		}
		return
	}
	spec.Binaries = bins
	if spec.BaseTar == "" || len(bins) == 0 || spec.Tag == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "image: -base, -bin, -tag and -out are required")
		flag.Usage()
		os.Exit(2)
	}
	img, err := Build(spec)
	if err == nil {
		err = Write(img, spec.Tag, *out, *layoutDir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	size, _ := os.Stat(*out)
	fmt.Printf("image: %s -> %s (%d MiB)\n", spec.Tag, *out, size.Size()>>20)
}
