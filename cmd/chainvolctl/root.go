package main

import (
	"os"

	"github.com/spf13/cobra"
)

// app holds the global flags and the state of one invocation.
type app struct {
	// started is set when a command's own code begins; an error before that
	// came from cobra's parsing and is a usage error.
	started bool

	targets         []string // --target NAME=URL
	stateDir        string   // --state-dir
	credentialsFile string   // --credentials-file
	output          string   // -o table|json
}

// run wraps a command's RunE: it validates the global flags and marks the
// start of the command's own work for exitCode.
func (a *app) run(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if a.output != "table" && a.output != "json" {
			return usagef("-o %q: the output format must be table or json", a.output)
		}
		if err := checkFlagValues(cmd); err != nil {
			return err
		}
		a.started = true
		jsonProgress.Store(a.output == "json")
		return fn(cmd, args)
	}
}

func (a *app) newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "chainvolctl",
		Short: "Inspect and manage chainvol backups; back up and restore disks without Kubernetes",
		Long: `chainvolctl is the operator's tool for chainvol, a node-local CSI driver whose
volume snapshots can be archived as incremental backup chains to a backup
target (a local directory or an S3 bucket).

Use it to see what a target holds (chains and their backups), check backups
(verify, --deep for every block), remove backups and collect unreferenced
blocks, and - when the cluster itself is gone - to back up or restore a disk
image or block device with the same engines the driver uses. "chainvolctl csi"
talks to a node's CSI socket for debugging.

Backup targets are given as the driver takes them: --target NAME=URL
(repeatable, the first is the default) or CHAINVOL_TARGETS=NAME=URL,...;
with neither, the driver's embedded default file://STATE_DIR/backups.
Credentials come from --credentials-file (key=value lines: accessKeyID,
secretAccessKey, sessionToken, encryptionKey) or the environment
(CHAINVOL_ACCESS_KEY_ID, CHAINVOL_SECRET_ACCESS_KEY, CHAINVOL_ENCRYPTION_KEY);
without an access key there, S3 targets use the AWS credential chain
(AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, ~/.aws/credentials with AWS_PROFILE,
IRSA or Pod Identity; the EC2 instance role with imds=true in the URL).
Credentials are never printed.

A backup is named [TARGET:]CHAIN@BACKUP, BACKUP an id, "latest",
"before:RFC3339" (the newest at or before) or "group:ID" (docs/applications.md).
Exit codes: 0 success, 1 failure, 2 usage error (bad flag, argument or
command), 3 not found (no such backup or chain), 4 wrong encryption key.
With -o json, errors go to stderr as one JSON object
{"error", "hint", "exitCode", "reason"} and backup/restore progress as JSON
lines {"progress": {...}}.`,
		Example: `  # What is in the embedded default target of this node?
  chainvolctl chain ls
  chainvolctl backup ls demo/data

  # An S3 target, credentials from a file
  chainvolctl --target offsite='s3://backups/prod?endpoint=s3.example.com:9000&region=us-east-1' \
      --credentials-file /etc/chainvol/s3.env backup verify offsite:demo/data@latest --deep

  # Bare-metal recovery of the newest backup onto a disk
  chainvolctl restore demo/data@latest --to /dev/sdb --force`,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          groupRunE,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringArrayVar(&a.targets, "target", nil, "backup target as NAME=URL (file:///abs/dir or s3://BUCKET/PREFIX?endpoint=HOST:PORT&region=R); repeatable, the first is the default (env CHAINVOL_TARGETS, comma-separated)")
	pf.StringVar(&a.stateDir, "state-dir", "/var/lib/chainvol", "the driver's state directory; the embedded default target is file://STATE_DIR/backups, and STATE_DIR/jobs/ holds the progress records of running jobs ('jobs')")
	pf.StringVar(&a.credentialsFile, "credentials-file", "", "key=value file with accessKeyID, secretAccessKey, sessionToken, encryptionKey")
	pf.StringVarP(&a.output, "output", "o", "table", "output format of listings and show commands: table or json")
	root.AddCommand(a.newTargetCmd(), a.newChainCmd(), a.newBackupCmd(), a.newRestoreCmd(), a.newGCCmd(), a.newBackupVerifyCmd(), a.newJobsCmd(), a.newCSICmd(), a.newK8sCmd(), a.newVersionCmd())
	root.SetOut(os.Stdout)
	return root
}
