package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

func (a *app) newBackupCmd() *cobra.Command {
	return parentCmd(&cobra.Command{
		Use:   "backup",
		Short: "List, show, verify, remove, create, mount and serve backups",
		Long: `Backups are named [TARGET:]CHAIN@BACKUP: TARGET a configured target name
(default: the first), CHAIN the chain, BACKUP a backup id such as
20261129T101500Z-3f9a0c17 or "latest" for the newest.`,
		Example: `  chainvolctl backup ls demo/data
  chainvolctl backup show demo/data@latest -o json
  chainvolctl backup verify demo/data@latest --deep
  chainvolctl backup create --from /srv/disk.img --chain lab/disk1`,
	}, a.newBackupLsCmd(), a.newBackupShowCmd(), a.newBackupVerifyCmd(),
		a.newBackupRmCmd(), a.newBackupForgetCmd(), a.newBackupCreateCmd(), a.newBackupMountCmd(), a.newBackupServeCmd())
}

// backupRow is one backup in listings; JSON field names are stable.
type backupRow struct {
	Chain        string    `json:"chain"`
	ID           string    `json:"id"`
	CreatedAt    time.Time `json:"createdAt"`
	Parent       string    `json:"parent"`
	SizeBytes    int64     `json:"sizeBytes"`
	ChangedBytes int64     `json:"changedBytes"`
	StoredBytes  int64     `json:"storedBytes"`
	FSType       string    `json:"fsType"`
}

func newBackupRow(m *s3chain.Manifest) backupRow {
	return backupRow{Chain: m.Chain, ID: m.ID, CreatedAt: m.CreatedAt, Parent: m.ParentID, SizeBytes: m.SizeBytes,
		ChangedBytes: m.DataBytes, StoredBytes: m.StoredBytes, FSType: m.FSType}
}

func (a *app) newBackupLsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ls [TARGET:]CHAIN",
		Short: "List the backups of a chain, oldest first",
		Long: `List the backups of a chain, oldest first: creation time, volume size, the
bytes changed since the parent (all data for a full backup), the bytes that
backup stored in the target (compressed), the filesystem found and the parent.`,
		Example: "  chainvolctl backup ls demo/data\n  chainvolctl backup ls offsite:demo/data -o json",
		Args:    args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, argv []string) error {
			tgt, chain, err := parseChainArg(argv[0])
			if err != nil {
				return err
			}
			repo, err := a.openRepo(cmd.Context(), tgt)
			if err != nil {
				return err
			}
			ms, err := repo.Backups(cmd.Context(), chain)
			if err != nil {
				return explain(err)
			}
			if len(ms) == 0 {
				return explain(fmt.Errorf("%w: chain %q has no backups in target %s", s3chain.ErrBackupNotFound, chain, repo.Store()))
			}
			rows := []backupRow{}
			for _, m := range ms {
				rows = append(rows, newBackupRow(m))
			}
			return a.emit(cmd, rows, func(w io.Writer) error {
				tb := newTable(w, "ID", "CREATED", "SIZE", "CHANGED", "STORED", "FSTYPE", "PARENT")
				for _, r := range rows {
					tb.row(r.ID, timeStr(r.CreatedAt), bytesStr(r.SizeBytes), bytesStr(r.ChangedBytes),
						bytesStr(r.StoredBytes), orDash(r.FSType), orDash(r.Parent))
				}
				return tb.flush()
			})
		}),
	}
}
