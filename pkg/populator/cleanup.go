package populator

import (
	"context"
	"fmt"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cleanup removes a claim's prime objects one at a time, in the order the
// snapshot-controller needs, and reports whether all are gone (callers
// look again until they are):
//  1. the prime claim (the PV of one never rebound goes with it: the
//     class's reclaim policy);
//  2. the prime VolumeSnapshot, only once the prime claim is gone: the
//     snapshot-controller refuses to delete a snapshot that a Pending
//     claim is provisioned from ("is in use (being used to restore a
//     PVC), will retry deletion"), and retries through its content;
//  3. the content, only once the snapshot is gone: a snapshot whose
//     content went first can never finish deleting ("failed to get
//     snapshotContent") and stays for good.
//
// The content's policy is Retain, so none of this deletes the backup.
func (r *Reconciler) cleanup(ctx context.Context, uid types.UID) (bool, error) {
	prime := &corev1.PersistentVolumeClaim{}
	prime.SetNamespace(r.Namespace)
	prime.SetName(primeName(uid))
	snap := &snapv1.VolumeSnapshot{}
	snap.SetNamespace(r.Namespace)
	snap.SetName(primeName(uid))
	content := &snapv1.VolumeSnapshotContent{}
	content.SetName(contentName(uid))
	for _, o := range []client.Object{prime, snap, content} {
		if gone, err := r.remove(ctx, o); err != nil || !gone {
			return false, err
		}
	}
	return true, nil
}

// remove deletes o unless it is gone, and reports whether it is gone (an
// object with finalizers lingers after its delete). It reads through the
// uncached reader: the cache may still show an object just deleted.
func (r *Reconciler) remove(ctx context.Context, o client.Object) (bool, error) {
	if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(o), o); apierrors.IsNotFound(err) {
		return true, nil
	} else if err != nil {
		return false, fmt.Errorf("get %T %s: %w", o, o.GetName(), err)
	}
	if o.GetDeletionTimestamp() != nil {
		return false, nil
	}
	if err := r.Client.Delete(ctx, o); apierrors.IsNotFound(err) {
		return true, nil
	} else if err != nil {
		return false, fmt.Errorf("delete %T %s: %w", o, o.GetName(), err)
	}
	return false, nil
}
