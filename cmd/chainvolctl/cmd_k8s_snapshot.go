package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/chainvol/chainvol/pkg/retention"
)

// snapshotFlags are the flags of "k8s snapshot".
type snapshotFlags struct {
	namespace, selector, class, schedule, kubeconfig string
	keep                                             int
	keepSet                                          bool // --keep given
	rules                                            policyFlags
	policy                                           retention.Policy // what prunes: --keep-* or keep-last --keep
}

func (a *app) newK8sSnapshotCmd() *cobra.Command {
	var f snapshotFlags
	cmd := &cobra.Command{
		Use:   "snapshot --selector LABELS --class CLASS [--keep N | --keep-daily N ...]",
		Short: "Snapshot the labelled claims of a namespace and prune by a retention policy (for a CronJob)",
		Long: `Create a VolumeSnapshot of class --class for every bound PVC of --namespace
matching --selector, named PVC-YYYYMMDDHHMMSS and labelled with the schedule
(--schedule) and the claim; then, per claim, delete this schedule's
snapshots older than the newest --keep ready ones (snapshots still
uploading are kept), or, with --keep-* flags instead of --keep, those the
retention policy does not keep (restic's forget rules, as in 'chainvolctl
backup forget': --keep-last, --keep-hourly, --keep-daily, --keep-weekly,
--keep-monthly, --keep-yearly, --keep-within; in UTC). With a backup class of deletionPolicy Delete
(deploy/examples/retention) a deleted snapshot deletes its backup and the
driver frees its blocks. deploy/examples/scheduled-backup runs this as a
CronJob; the in-cluster service account needs list on persistentvolumeclaims
and create, list, delete on volumesnapshots.`,
		Example: `  chainvolctl k8s snapshot --namespace shop --selector backup=nightly --class chainvol-backup-delete --keep 7
  chainvolctl k8s snapshot -n shop -l backup=hourly --class chainvol-backup-delete --keep-hourly 24 --keep-daily 7 --keep-weekly 4`,
		Args: args(cobra.NoArgs),
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			if err := f.setPolicy(cmd); err != nil {
				return err
			}
			return k8sSnapshot(cmd.Context(), cmd.ErrOrStderr(), f)
		}),
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.namespace, "namespace", "n", "default", "namespace of the claims")
	fl.StringVarP(&f.selector, "selector", "l", "", "label selector of the claims (required), e.g. backup=nightly")
	fl.StringVar(&f.class, "class", "", "VolumeSnapshotClass of the snapshots (required)")
	fl.StringVar(&f.schedule, "schedule", "default", "schedule name (label value); only this schedule's snapshots are pruned")
	fl.IntVar(&f.keep, "keep", 7, "ready snapshots to keep per claim; older ones of the schedule are deleted (0 keeps all)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	addPolicyFlags(fl, &f.rules)
	return cmd
}

// setPolicy sets f.policy from the --keep-* flags, else from --keep (its
// keep-last); both at once is a usage error.
func (f *snapshotFlags) setPolicy(cmd *cobra.Command) error {
	if !f.rules.changed(cmd.Flags()) {
		f.policy = retention.Policy{Last: f.keep}
		return nil
	}
	if cmd.Flags().Changed("keep") {
		return usagef("--keep is keep-last: give --keep-last with the other --keep-* flags, not --keep")
	}
	var err error
	f.policy, err = f.rules.policy()
	return err
}

// k8sSnapshot snapshots every selected claim, then prunes each claim's
// schedule. A claim that fails is reported and the others still run; the
// command then fails naming how many did.
func k8sSnapshot(ctx context.Context, log io.Writer, f snapshotFlags) error {
	if f.selector == "" || f.class == "" || f.keep < 0 {
		return usagef("--selector and --class are required and --keep must be >= 0")
	}
	if _, err := labels.Parse(f.selector); err != nil {
		return usagef("--selector %q: %v", f.selector, err)
	}
	core, snaps, err := kubeClients(f.kubeconfig)
	if err != nil {
		return err
	}
	pvcs, err := core.PersistentVolumeClaims(f.namespace).List(ctx, metav1.ListOptions{LabelSelector: f.selector})
	if err != nil {
		return fmt.Errorf("list claims %s in %s: %w", f.selector, f.namespace, err)
	}
	var errs []error
	now := time.Now()
	for _, pvc := range pvcs.Items {
		if pvc.Status.Phase != corev1.ClaimBound {
			fmt.Fprintf(log, "pvc/%s skipped: %s, not Bound\n", pvc.Name, pvc.Status.Phase)
			continue
		}
		if err := snapshotClaim(ctx, log, snaps.SnapshotV1().VolumeSnapshots(f.namespace), pvc.Name, f, now); err != nil {
			fmt.Fprintf(log, "pvc/%s: %v\n", pvc.Name, err)
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d claims failed: %w", len(errs), len(pvcs.Items), errors.Join(errs...))
	}
	return nil
}

// volumeSnapshots is the part of the typed client one claim needs.
type volumeSnapshots interface {
	Create(context.Context, *snapv1.VolumeSnapshot, metav1.CreateOptions) (*snapv1.VolumeSnapshot, error)
	List(context.Context, metav1.ListOptions) (*snapv1.VolumeSnapshotList, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
}

// snapshotClaim takes one snapshot of claim pvc and prunes its schedule:
// the snapshots the labels select whose source is this very claim (a
// hashed claimLabel may equal another claim's name).
func snapshotClaim(ctx context.Context, log io.Writer, c volumeSnapshots, pvc string, f snapshotFlags, now time.Time) error {
	l := map[string]string{scheduleLabel: f.schedule, pvcLabel: claimLabel(pvc)}
	vs := &snapv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: scheduledName(pvc, now), Labels: l},
		Spec: snapv1.VolumeSnapshotSpec{VolumeSnapshotClassName: &f.class,
			Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: &pvc}},
	}
	if _, err := c.Create(ctx, vs, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create volumesnapshot %s: %w", vs.Name, err)
	}
	fmt.Fprintf(log, "volumesnapshot/%s created\n", vs.Name)
	if f.policy.Empty() {
		return nil
	}
	list, err := c.List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(l).String()})
	if err != nil {
		return fmt.Errorf("list snapshots of the schedule: %w", err)
	}
	mine := slices.DeleteFunc(list.Items, func(v snapv1.VolumeSnapshot) bool {
		src := v.Spec.Source.PersistentVolumeClaimName
		return src == nil || *src != pvc
	})
	for _, old := range toPrune(mine, f.policy) {
		if err := c.Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("delete volumesnapshot %s: %w", old.Name, err)
		}
		fmt.Fprintf(log, "volumesnapshot/%s deleted (%s)\n", old.Name, f.policy)
	}
	return nil
}
