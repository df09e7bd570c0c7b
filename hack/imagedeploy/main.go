// Command imagedeploy writes, for the image `make image` has just built,
// what installs exactly that image without editing a file, and prints the
// commands: under -out (bin/image),
//
//	deploy/DIR/kustomization.yaml  for every kustomization DIR of deploy/
//	                               that runs the image (deploy/base, the S3
//	                               example, the scheduled-backup CronJob):
//	                               DIR as a resource, with kustomize's
//	                               images: setting the built tag
//	chart/chainvol/                charts/chainvol with appVersion set to
//	                               the build's version (its default image tag)
//	install.txt                    the printed commands
//
// The version is the Makefile's (hack/version.sh, from git describe), so
// the image tag, the chart's appVersion and labels, the kustomize image and
// the binaries' -version agree (issue 33). See docs/deploy.md "Building
// the image".
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	var o Options
	flag.StringVar(&o.Image, "image", "", "the image reference make image built, REPOSITORY:TAG")
	flag.StringVar(&o.Version, "version", "", "the build's version (hack/version.sh); the chart's appVersion")
	flag.StringVar(&o.Tarball, "tar", "", "the image tarball, for the ctr import line")
	flag.StringVar(&o.DeployDir, "deploy", "deploy", "the kustomize tree whose kustomizations get overlays")
	flag.StringVar(&o.ChartDir, "chart", "charts/chainvol", "the chart to stamp with the version")
	flag.StringVar(&o.Out, "out", "", "directory to write deploy/, chart/ and install.txt into (bin/image)")
	flag.Parse()
	if o.Image == "" || o.Version == "" || o.Tarball == "" || o.Out == "" {
		fmt.Fprintln(os.Stderr, "imagedeploy: -image, -version, -tar and -out are required")
		flag.Usage()
		os.Exit(2)
	}
	text, err := Write(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagedeploy:", err)
		os.Exit(1)
	}
	fmt.Print(text)
}
