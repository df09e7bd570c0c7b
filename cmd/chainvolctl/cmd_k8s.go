package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

// defaultDriverName is the driver's default CSI name (pkg/driver.DefaultDriverName,
// not imported: chainvolctl does not link the driver).
const defaultDriverName = "chainvol.csi.io"

func (a *app) newK8sCmd() *cobra.Command {
	return parentCmd(&cobra.Command{
		Use:   "k8s",
		Short: "Make Kubernetes objects for the backups of a target",
	}, a.newK8sImportCmd(), a.newK8sSnapshotCmd(), a.newK8sSourceCmd())
}

// importFlags are the flags of "k8s import".
type importFlags struct {
	in, node, driver, policy, class, secret, kubeconfig string
	chains, nsMap                                       []string
	before, after                                       string
	apply                                               bool
}

func (a *app) newK8sImportCmd() *cobra.Command {
	var f importFlags
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Write or apply VolumeSnapshotContent + VolumeSnapshot pairs for a target's backups",
		Long: `For each backup of the target (filtered by --chain and by creation time), write a
pre-provisioned VolumeSnapshotContent whose snapshotHandle is the backup's
snapshot id (backup:TARGET:CHAIN@ID) and the VolumeSnapshot bound to it, as
YAML on stdout, or create them with --apply (objects that exist are left
alone). A new cluster then restores with an ordinary PVC dataSource.

A chain NAMESPACE/NAME gives the VolumeSnapshot NAME-ID (lower case) in
NAMESPACE, or in NEW with --namespace-map NAMESPACE=NEW, when ID is a
default backup id and NAME a lower-case name; else a readable form of
NAME-ID and a hash of CHAIN@ID (e.g. db-0-nightly-3a1f...), so distinct
backups never share a name. With --apply, a name that an object of
another backup holds is left alone and reported (the command fails). With the
csi-snapshotter sidecar running per node (--node-deployment, chainvol's
default), a content is handled only by the sidecar of the node in its
snapshot.storage.kubernetes.io/managed-by label: give any node running
chainvol with --managed-by NODE. TARGET in the handles is the target's name
here, which must be the driver's name for the same target.

--deletion-policy Delete makes deleting the VolumeSnapshot delete the backup
(the driver then frees its blocks); the default Retain keeps it.`,
		Example: `  chainvolctl --target offsite='s3://backups/prod?endpoint=s3.example.com&region=eu-1' \
      k8s import --in offsite --before 2026-11-29T12:00:00+01:00 --managed-by node-a > snaps.yaml
  chainvolctl k8s import --chain shop/data-db-0 --namespace-map shop=shop-restore --managed-by node-a --apply`,
		Args: args(cobra.NoArgs),
		RunE: a.run(func(cmd *cobra.Command, _ []string) error { return a.k8sImport(cmd, f) }),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.in, "in", "", "target to import from (default: the default target)")
	fl.StringArrayVar(&f.chains, "chain", nil, "import only this chain (repeatable; default every chain)")
	fl.StringVar(&f.before, "before", "", "only backups created at or before this RFC 3339 time")
	fl.StringVar(&f.after, "after", "", "only backups created at or after this RFC 3339 time")
	fl.StringArrayVar(&f.nsMap, "namespace-map", nil, "put snapshots of chains in namespace OLD into NEW, as OLD=NEW (repeatable)")
	fl.StringVar(&f.node, "managed-by", "", "node for the snapshot.storage.kubernetes.io/managed-by label (needed by per-node csi-snapshotter sidecars)")
	fl.StringVar(&f.driver, "driver", defaultDriverName, "CSI driver name")
	fl.StringVar(&f.policy, "deletion-policy", "Retain", "deletionPolicy of the contents: Retain or Delete (deleting the snapshot deletes the backup)")
	fl.StringVar(&f.class, "class", "", "VolumeSnapshotClass name for the objects (optional)")
	fl.StringVar(&f.secret, "deletion-secret", "", "NAMESPACE/NAME of the Secret the sidecar passes to DeleteSnapshot (encrypted chains, per-request credentials)")
	fl.BoolVar(&f.apply, "apply", false, "create the objects in the cluster instead of printing them")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig for --apply (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	return cmd
}

// k8sImport lists, filters, builds and prints or applies the pairs.
func (a *app) k8sImport(cmd *cobra.Command, f importFlags) error {
	o, before, after, err := a.importSettings(f)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	repo, err := a.openRepo(ctx, f.in)
	if err != nil {
		return err
	}
	ms, err := importedBackups(ctx, repo, f.chains, before, after)
	if err != nil {
		return err
	}
	var pairs []snapshotPair
	for _, m := range ms {
		p, err := pairFor(m, o)
		if err != nil {
			return usageError{err}
		}
		pairs = append(pairs, p)
	}
	if err := distinctSnapshots(pairs); err != nil {
		return err
	}
	if o.node == "" {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning: no --managed-by NODE: per-node csi-snapshotter sidecars (chainvol's deployment) ignore contents without the label")
	}
	if f.apply {
		return applyPairs(ctx, cmd.ErrOrStderr(), f.kubeconfig, pairs)
	}
	return writePairs(cmd.OutOrStdout(), pairs)
}

// importSettings validates the flags into importOptions and the time bounds.
func (a *app) importSettings(f importFlags) (o importOptions, before, after time.Time, err error) {
	if f.policy != "Retain" && f.policy != "Delete" {
		return o, before, after, usagef("--deletion-policy %q must be Retain or Delete", f.policy)
	}
	if f.secret != "" {
		if ns, n, ok := strings.Cut(f.secret, "/"); !ok || ns == "" || n == "" {
			return o, before, after, usagef("--deletion-secret %q must be NAMESPACE/NAME", f.secret)
		}
	}
	for _, b := range []struct {
		flag, v string
		t       *time.Time
	}{{"--before", f.before, &before}, {"--after", f.after, &after}} {
		if b.v == "" {
			continue
		}
		if *b.t, err = time.Parse(time.RFC3339Nano, b.v); err != nil {
			return o, before, after, usagef("%s %q must be an RFC 3339 time like 2026-11-29T10:15:00Z or 2026-11-29T11:15:00+01:00", b.flag, b.v)
		}
	}
	nsMap, err := parseNamespaceMap(f.nsMap)
	if err != nil {
		return o, before, after, err
	}
	set, err := a.targetSet()
	if err != nil {
		return o, before, after, err
	}
	t, err := set.Lookup(f.in)
	if err != nil {
		return o, before, after, usageError{explain(err)}
	}
	return importOptions{target: t.Name, driver: f.driver, node: f.node, policy: f.policy, class: f.class,
		nsMap: nsMap, deletionSecret: f.secret}, before, after, nil
}

// importedBackups are the backups of the chosen chains (all when none)
// created within [after, before] (a zero bound is open), by chain then time.
func importedBackups(ctx context.Context, repo *s3chain.Repo, chains []string, before, after time.Time) ([]*s3chain.Manifest, error) {
	all := len(chains) == 0
	if all {
		var err error
		if chains, err = repo.Chains(ctx); err != nil {
			return nil, explain(err)
		}
	}
	var out []*s3chain.Manifest
	for _, c := range slices.Compact(slices.Sorted(slices.Values(chains))) {
		ms, err := repo.Backups(ctx, c)
		if all && errors.Is(err, s3chain.ErrWrongKey) {
			klog.InfoS("chain needs another key (or none): not imported", "chain", c)
			continue
		}
		if err != nil {
			return nil, explain(wrapOp("list backups of chain "+c, err))
		}
		for _, m := range ms {
			if (before.IsZero() || !m.CreatedAt.After(before)) && (after.IsZero() || !m.CreatedAt.Before(after)) {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// writePairs prints the objects as a YAML stream, each content before its snapshot.
func writePairs(w io.Writer, pairs []snapshotPair) error {
	for _, p := range pairs {
		for _, obj := range []any{p.Content, p.Snapshot} {
			b, err := yaml.Marshal(obj)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(w, "---\n%s", b); err != nil {
				return err
			}
		}
	}
	return nil
}
