package populator

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// SetupWithManager watches user claims (those Ours), prime claims (mapped
// back through AnnPopulatedFrom) and BackupSources (a changed spec wakes
// its claims: a fixed source is tried again).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("backupsource-populator").
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(r.claimRequests)).
		Watches(&BackupSource{}, handler.EnqueueRequestsFromMapFunc(r.sourceRequests), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

// claimRequests maps a claim event to the user claim to reconcile.
func (r *Reconciler) claimRequests(_ context.Context, o client.Object) []reconcile.Request {
	c, ok := o.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil
	}
	if Ours(c) {
		return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(c)}}
	}
	if from := c.Annotations[AnnPopulatedFrom]; c.Namespace == r.Namespace && from != "" {
		if ns, name, ok := strings.Cut(from, "/"); ok {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
		}
	}
	return nil
}

// sourceRequests maps a source to the claims of its namespace naming it.
func (r *Reconciler) sourceRequests(ctx context.Context, o client.Object) []reconcile.Request {
	var claims corev1.PersistentVolumeClaimList
	if err := r.Client.List(ctx, &claims, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range claims.Items {
		c := &claims.Items[i]
		if Ours(c) && c.Spec.DataSourceRef.Name == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
		}
	}
	return out
}
