package populator

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1 "k8s.io/api/core/v1"
)

// ConditionReady is the condition of a claim in a BackupSource's status.
const ConditionReady = "Ready"

// permanent lists the reasons after which the populator stops (until the
// source changes: its generation).
var permanent = map[string]bool{
	ReasonInvalidReference: true, ReasonBackupNotFound: true, ReasonCredentials: true,
	ReasonFSTypeConflict: true, ReasonTooSmall: true, ReasonRestoreFailed: true,
}

// stopped reports whether claim c failed for good at src's generation.
func stopped(src *BackupSource, c *corev1.PersistentVolumeClaim) bool {
	for _, cs := range src.Status.Claims {
		if cs.UID != string(c.UID) {
			continue
		}
		cond := meta.FindStatusCondition(cs.Conditions, ConditionReady)
		return cond != nil && cond.Status == metav1.ConditionFalse && permanent[cond.Reason] && cond.ObservedGeneration == src.Generation
	}
	return false
}

// setStatus records claim c's state in src's status (read again and
// retried on a conflict). bref and resolved are kept when "".
func (r *Reconciler) setStatus(ctx context.Context, src *BackupSource, c *corev1.PersistentVolumeClaim, bref, resolved string, ready bool, reason, msg string) {
	key := types.NamespacedName{Namespace: src.Namespace, Name: src.Name}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur BackupSource
		if err := r.Client.Get(ctx, key, &cur); err != nil {
			return err
		}
		cs := claimStatus(&cur, c)
		if bref != "" {
			cs.Backup = bref
		}
		if resolved != "" {
			cs.Resolved = resolved
		}
		st := metav1.ConditionFalse
		if ready {
			st = metav1.ConditionTrue
		}
		if len(msg) > 1000 {
			msg = msg[:1000]
		}
		changed := meta.SetStatusCondition(&cs.Conditions, metav1.Condition{Type: ConditionReady, Status: st, Reason: reason, Message: msg, ObservedGeneration: cur.Generation})
		if !changed && bref == "" && resolved == "" {
			return nil
		}
		return r.Client.Status().Update(ctx, &cur)
	})
	if err != nil {
		klog.ErrorS(err, "update BackupSource status", "source", key, "claim", c.Name)
	}
}

// claimStatus returns src's entry for claim c, added when missing (a
// re-created claim of the same name replaces the old entry).
func claimStatus(src *BackupSource, c *corev1.PersistentVolumeClaim) *ClaimStatus {
	for i := range src.Status.Claims {
		if cs := &src.Status.Claims[i]; cs.Name == c.Name {
			if cs.UID != string(c.UID) {
				*cs = ClaimStatus{Name: c.Name, UID: string(c.UID)}
			}
			return cs
		}
	}
	src.Status.Claims = append(src.Status.Claims, ClaimStatus{Name: c.Name, UID: string(c.UID)})
	return &src.Status.Claims[len(src.Status.Claims)-1]
}

// dropStatus removes a deleted claim's entry.
func (r *Reconciler) dropStatus(ctx context.Context, src *BackupSource, uid types.UID) {
	key := client.ObjectKeyFromObject(src)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur BackupSource
		if err := r.Client.Get(ctx, key, &cur); err != nil {
			return client.IgnoreNotFound(err)
		}
		keep := cur.Status.Claims[:0]
		for _, cs := range cur.Status.Claims {
			if cs.UID != string(uid) {
				keep = append(keep, cs)
			}
		}
		if len(keep) == len(cur.Status.Claims) {
			return nil
		}
		cur.Status.Claims = keep
		return r.Client.Status().Update(ctx, &cur)
	})
	if err != nil {
		klog.ErrorS(err, "update BackupSource status", "source", key)
	}
}
