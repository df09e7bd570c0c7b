package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/chainvol/chainvol/pkg/backupid"
	"github.com/chainvol/chainvol/pkg/populator"
)

// sourceFlags are the flags of "k8s source".
type sourceFlags struct {
	name, namespace, target, chain, backup, before, group string
}

func (a *app) newK8sSourceCmd() *cobra.Command {
	var f sourceFlags
	cmd := &cobra.Command{
		Use:   "source",
		Short: "Write a BackupSource that claims name in spec.dataSourceRef (the volume populator)",
		Long: `Write a BackupSource (chainvol.csi.io/v1alpha1) as YAML on stdout: a claim whose
spec.dataSourceRef names it is filled from the backup it names by chainvol's
volume populator (docs/applications.md). --chain may use ${pvc.namespace}
and ${pvc.name} (the default, "${pvc.namespace}/${pvc.name}", gives every
claim of a StatefulSet its own member's chain); --backup is a backup id,
latest, before:T or group:ID as fromBackup takes them (--before T and
--group ID are short for the last two). The reference is checked with
fromBackup's parser for a claim data-0 before it is written. --target is
the driver's name of the target ("" for the driver's default).`,
		Example: `  chainvolctl k8s source --namespace shop --name db --before 2026-11-29T10:15:00Z | kubectl apply -f -
  chainvolctl k8s source --namespace shop --name web0 --chain shop/data-web-0 --backup 20261129T101500Z`,
		Args: args(cobra.NoArgs),
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			src, err := backupSource(f)
			if err != nil {
				return err
			}
			out, err := yaml.Marshal(src)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.name, "name", "", "the BackupSource's name (required)")
	fl.StringVar(&f.namespace, "namespace", "", "its namespace: the claims' (required)")
	fl.StringVar(&f.target, "target", "", "the driver's name of the backup target (default: the driver's default)")
	fl.StringVar(&f.chain, "chain", backupid.TemplateNamespace+"/"+backupid.TemplateName, "the chain, ${pvc.namespace} and ${pvc.name} filled from each claim")
	fl.StringVar(&f.backup, "backup", backupid.Latest, "backup id, latest, before:RFC3339 or group:ID")
	fl.StringVar(&f.before, "before", "", "short for --backup before:T")
	fl.StringVar(&f.group, "group", "", "short for --backup group:ID")
	return cmd
}

// backupSource builds and checks the object of the flags.
func backupSource(f sourceFlags) (*populator.BackupSource, error) {
	for _, n := range []struct{ flag, v string }{{"--name", f.name}, {"--namespace", f.namespace}} {
		if errs := validation.IsDNS1123Subdomain(n.v); len(errs) > 0 {
			return nil, usagef("%s %q: %s", n.flag, n.v, strings.Join(errs, "; "))
		}
	}
	backup := f.backup
	switch {
	case f.before != "" && f.group != "":
		return nil, usagef("give --before or --group, not both")
	case f.before != "":
		backup = backupid.BeforePrefix + f.before
	case f.group != "":
		backup = backupid.GroupPrefix + f.group
	}
	spec := populator.BackupSourceSpec{Target: f.target, Chain: f.chain, Backup: backup}
	if _, err := populator.RefFor(spec, f.namespace, "data-0", "default"); err != nil {
		return nil, usagef("%v", err)
	}
	return &populator.BackupSource{
		TypeMeta:   metav1.TypeMeta{APIVersion: populator.GroupVersion.String(), Kind: populator.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: f.name, Namespace: f.namespace},
		Spec:       spec,
	}, nil
}

// String for tests and messages.
func sourceRef(s *populator.BackupSource) string {
	return fmt.Sprintf("%s/%s: %s@%s", s.Namespace, s.Name, s.Spec.Chain, s.Spec.Backup)
}
