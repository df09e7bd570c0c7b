package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Check opens the tarball at path as an engine would (the tag's image),
// checks its entrypoint and version label, unpacks its filesystem and runs
// in it, under chroot: the entrypoint with -version (which must print
// version) and the filesystem tools the node plugin executes. Needs root.
func Check(path, tag, version string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	img, err := tarball.ImageFromPath(path, &ref)
	if err != nil {
		return fmt.Errorf("open %s as %s: %w", path, tag, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	if got := cf.Config.Labels["org.opencontainers.image.version"]; got != version {
		return fmt.Errorf("version label %q, want %q", got, version)
	}
	root, err := os.MkdirTemp("", "chainvol-image-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	untar := exec.Command("tar", "-x", "-C", root)
	untar.Stdin = mutate.Extract(img)
	if out, err := untar.CombinedOutput(); err != nil {
		return fmt.Errorf("unpack: %v: %s", err, out)
	}
	out, err := exec.Command("chroot", append([]string{root}, append(cf.Config.Entrypoint, "-version")...)...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), " "+version+" ") {
		return fmt.Errorf("%v -version in the image: %v: %q, want version %s", cf.Config.Entrypoint, err, out, version)
	}
	fmt.Printf("image-check: %s", out)
	for _, tool := range [][]string{{"mkfs.xfs", "-V"}, {"mkfs.ext4", "-V"}, {"xfs_growfs", "-V"}, {"resize2fs"},
		{"losetup", "--version"}, {"blkid", "-V"}, {"mount", "--version"}, {"chainvolctl", "version"}, {"chainvol-populator", "-version"}} {
		// resize2fs without arguments prints its usage and exits 1.
		if out, err := exec.Command("chroot", append([]string{root}, tool...)...).CombinedOutput(); err != nil && !slices.Equal(tool, []string{"resize2fs"}) {
			return fmt.Errorf("%s in the image: %v: %s", tool[0], err, out)
		}
	}
	fmt.Println("image-check: entrypoint, version and the node plugin's tools run in the image")
	return nil
}
