package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

// backupDetail is "backup show": every manifest field, the manifest's digest
// (what a child's parentDigest records) and the block list only on request.
type backupDetail struct {
	*s3chain.Manifest
	// Blocks shadows the manifest's list, which can hold millions of entries.
	Blocks []s3chain.BlockRef `json:"blocks,omitempty"`
	Digest string             `json:"digest"`
	Full   bool               `json:"full"`
}

func (a *app) newBackupShowCmd() *cobra.Command {
	var blocks bool
	cmd := &cobra.Command{
		Use:   "show [TARGET:]CHAIN@BACKUP",
		Short: "Show one backup in full",
		Long: `Show everything one backup's manifest records: format version, parent, size,
block size, filesystem, source volume and node, block counts, bytes changed
and stored, and the volume digest every restore checks. The manifest is
authenticated (MAC) before it is shown.`,
		Example: "  chainvolctl backup show demo/data@latest\n  chainvolctl backup show demo/data@20261129T101500Z-3f9a0c17 -o json --blocks",
		Args:    args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, argv []string) error {
			_, m, err := a.resolveRef(cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			d := backupDetail{Manifest: m, Digest: m.Digest(), Full: m.Full()}
			if blocks {
				d.Blocks = m.Blocks
			}
			return a.emit(cmd, d, func(w io.Writer) error { return showTable(w, m) })
		}),
	}
	cmd.Flags().BoolVar(&blocks, "blocks", false, "include the block list (index and digest of each listed block) in -o json")
	return cmd
}

// showTable prints a manifest as aligned "field: value" lines.
func showTable(w io.Writer, m *s3chain.Manifest) error {
	kind := "incremental"
	if m.Full() {
		kind = "full"
	}
	tb := newTable(w, "Chain:", m.Chain)
	for _, kv := range [][2]string{
		{"Backup:", m.ID},
		{"Kind:", kind},
		{"Created:", timeStr(m.CreatedAt)},
		{"Parent:", orDash(m.ParentID)},
		{"Format:", fmt.Sprintf("version %d", m.FormatVersion)},
		{"Parent digest:", orDash(m.ParentDigest)},
		{"Digest:", m.Digest()},
		{"Size:", fmt.Sprintf("%s (%d bytes)", bytesStr(m.SizeBytes), m.SizeBytes)},
		{"Block size:", bytesStr(m.BlockSize)},
		{"Volume mode:", orDash(m.VolumeMode)},
		{"Filesystem:", orDash(m.FSType)},
		{"Source volume:", orDash(m.SourceVolume)},
		{"Node:", orDash(m.Node)},
		{"Group:", orDash(joinNonEmpty(m.GroupID, m.Member))},
		{"Blocks changed:", fmt.Sprintf("%d data, %d zeroed (of %d listed)", m.DataBlocks, m.ZeroBlocks, len(m.Blocks))},
		{"Changed:", bytesStr(m.DataBytes)},
		{"Stored:", bytesStr(m.StoredBytes)},
		{"Allocated:", bytesStr(m.AllocatedBytes)},
		{"Volume digest:", m.VolumeDigest},
	} {
		tb.row(kv[0], kv[1])
	}
	return tb.flush()
}

func joinNonEmpty(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + " / " + b
}
