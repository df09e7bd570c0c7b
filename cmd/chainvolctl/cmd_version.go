package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/chainvol/chainvol/pkg/version"
)

// newVersionCmd prints the build's version, commit and Go version (the
// same pkg/version values the driver reports in GetPluginInfo and in
// chainvol_build_info).
func (a *app) newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print chainvolctl's version, commit and Go version",
		Example: `  chainvolctl version
  chainvolctl version -o json`,
		Args: args(cobra.NoArgs),
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			v := version.Get()
			return a.emit(cmd, v, func(w io.Writer) error {
				_, err := fmt.Fprintln(w, "chainvolctl "+v.String())
				return err
			})
		}),
	}
}
