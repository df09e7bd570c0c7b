package populator

import (
	"context"
	"fmt"
	"sync"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Config is what the populator needs to know.
type Config struct {
	Namespace     string // where prime claims and snapshots live (the populator's own)
	Driver        string // the CSI driver's name (chainvol.csi.io)
	DefaultTarget string // the driver's default target's name
	// Poll is how often a claim in progress is looked at again (its prime
	// claim, its snapshot content, its events); 0 means 2s.
	Poll time.Duration
}

// Reconciler fills user claims from BackupSources (one Reconcile per user
// claim; every step is idempotent and keyed by the claim's UID, so a
// restarted populator resumes where the API objects say it was).
type Reconciler struct {
	Client client.Client // cached: claims, PVs, classes, sources
	Reader client.Reader // uncached: snapshots, contents, events, CSINodes
	Events record.EventRecorder
	Config

	mu   sync.Mutex
	said map[types.UID]string // last event message per claim, so progress is told once
	// stop holds the source generation a claim failed for good at, until
	// the cached source's status says so too (stopped).
	stop map[types.UID]int64
}

// Ours reports whether a claim's dataSourceRef names this populator's API group.
func Ours(c *corev1.PersistentVolumeClaim) bool {
	ref := c.Spec.DataSourceRef
	return ref != nil && ref.APIGroup != nil && *ref.APIGroup == Group
}

// Reconcile moves one user claim a step on: wait for its consumer, make
// the prime objects, relay the restore's progress and failures, rebind
// the PV, clean up.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var c corev1.PersistentVolumeClaim
	if err := r.Client.Get(ctx, req.NamespacedName, &c); apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil
	} else if err != nil {
		return ctrl.Result{}, err
	}
	if !Ours(&c) {
		return ctrl.Result{}, nil
	}
	if c.DeletionTimestamp != nil {
		return r.release(ctx, &c)
	}
	if c.Spec.VolumeName != "" && c.Status.Phase == corev1.ClaimBound {
		return r.finish(ctx, &c)
	}
	return r.populate(ctx, &c)
}

// poll is the wait before looking at a claim in progress again.
func (r *Reconciler) poll() ctrl.Result {
	if r.Poll > 0 {
		return ctrl.Result{RequeueAfter: r.Poll}
	}
	return ctrl.Result{RequeueAfter: 2 * time.Second}
}

// populate runs the steps before the user's claim is bound.
func (r *Reconciler) populate(ctx context.Context, c *corev1.PersistentVolumeClaim) (ctrl.Result, error) {
	ref := c.Spec.DataSourceRef
	if ref.Kind != Kind || ref.Namespace != nil && *ref.Namespace != c.Namespace {
		r.say(c, corev1.EventTypeWarning, ReasonWrongKind, fmt.Sprintf("dataSourceRef names %s %q of group %s; this populator fills claims from a %s of the claim's own namespace", ref.Kind, ref.Name, Group, Kind))
		return ctrl.Result{}, nil
	}
	class, ok, err := r.class(ctx, c)
	if err != nil || !ok {
		return ctrl.Result{}, err // another driver's claim, or no class: nothing to do
	}
	node := c.Annotations[AnnSelectedNode]
	if node == "" && class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer {
		r.say(c, corev1.EventTypeNormal, ReasonWaitingForConsumer, "waiting for a pod to use the claim: the volume is restored on the node the scheduler picks")
		return ctrl.Result{}, nil
	}
	var src BackupSource
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: ref.Name}, &src); apierrors.IsNotFound(err) {
		r.say(c, corev1.EventTypeWarning, ReasonSourceMissing, fmt.Sprintf("%s %s/%s does not exist; create it (chainvolctl k8s source) and the claim is filled", Kind, c.Namespace, ref.Name))
		return ctrl.Result{RequeueAfter: 10 * time.Second}, nil
	} else if err != nil {
		return ctrl.Result{}, err
	}
	if stopped(&src, c) || r.stoppedAt(c.UID, src.Generation) {
		return r.abandon(ctx, c) // failed for good at this generation of the source
	}
	if !controllerutil.ContainsFinalizer(c, Finalizer) {
		controllerutil.AddFinalizer(c, Finalizer)
		return ctrl.Result{Requeue: true}, r.Client.Update(ctx, c)
	}
	bref, err := RefFor(src.Spec, c.Namespace, c.Name, r.DefaultTarget)
	if err != nil {
		return r.fail(ctx, c, &src, "", ReasonInvalidReference, err.Error())
	}
	if node == "" {
		if node, err = r.anyNode(ctx); err != nil {
			return ctrl.Result{RequeueAfter: 10 * time.Second}, err
		}
	}
	return r.restore(ctx, c, &src, bref.String(), Handle(bref), node)
}

// restore makes the prime objects, watches them and rebinds the PV once
// the prime claim is bound.
func (r *Reconciler) restore(ctx context.Context, c *corev1.PersistentVolumeClaim, src *BackupSource, bref, handle, node string) (ctrl.Result, error) {
	if err := r.ensure(ctx, c, handle, node); err != nil {
		return ctrl.Result{}, err
	}
	var vsc snapv1.VolumeSnapshotContent
	if err := r.Reader.Get(ctx, types.NamespacedName{Name: contentName(c.UID)}, &vsc); err == nil && vsc.Status != nil && vsc.Status.Error != nil && vsc.Status.Error.Message != nil {
		if reason, permanent := Classify(*vsc.Status.Error.Message); permanent {
			return r.fail(ctx, c, src, bref, reason, fmt.Sprintf("backup %s: %s", bref, *vsc.Status.Error.Message))
		}
	}
	var prime corev1.PersistentVolumeClaim
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: primeName(c.UID)}, &prime); err != nil {
		return r.poll(), client.IgnoreNotFound(err)
	}
	if prime.Spec.VolumeName == "" {
		return r.relay(ctx, c, src, bref, &prime)
	}
	return r.poll(), r.rebind(ctx, c, prime.Spec.VolumeName)
}

// ensure creates the content, the snapshot and the prime claim (each
// once: an existing one of the name is kept).
func (r *Reconciler) ensure(ctx context.Context, c *corev1.PersistentVolumeClaim, handle, node string) error {
	objs := []client.Object{contentFor(c, handle, r.Driver, r.Namespace, node), snapshotFor(c, r.Namespace), primeFor(c, r.Namespace, node)}
	made := false
	for _, o := range objs {
		err := r.Client.Create(ctx, o)
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
		made = err == nil
	}
	if made { // the prime claim is new: said once, not at every look
		r.say(c, corev1.EventTypeNormal, ReasonRestoring, fmt.Sprintf("restoring %s on node %s (prime claim %s/%s)", handle, node, r.Namespace, primeName(c.UID)))
	}
	return nil
}

// relay tells the user's claim what the provisioner says about the prime
// claim: the restore's progress, a transient failure (retried by the
// provisioner with backoff), or a permanent one (stop, clean up).
func (r *Reconciler) relay(ctx context.Context, c *corev1.PersistentVolumeClaim, src *BackupSource, bref string, prime *corev1.PersistentVolumeClaim) (ctrl.Result, error) {
	msg, err := r.lastProvisioningEvent(ctx, prime)
	if err != nil || msg == "" {
		r.setStatus(ctx, src, c, bref, "", false, ReasonRestoring, "the driver restores the backup")
		return r.poll(), err
	}
	reason, permanent := Classify(msg)
	if permanent {
		return r.fail(ctx, c, src, bref, reason, msg)
	}
	kind := corev1.EventTypeNormal
	if reason != ReasonRestoring {
		kind = corev1.EventTypeWarning
	}
	r.say(c, kind, reason, msg)
	r.setStatus(ctx, src, c, bref, "", false, reason, msg)
	return r.poll(), nil
}

// lastProvisioningEvent is the newest ProvisioningFailed message about the
// prime claim, "" for none.
func (r *Reconciler) lastProvisioningEvent(ctx context.Context, prime *corev1.PersistentVolumeClaim) (string, error) {
	var evs corev1.EventList
	if err := r.Reader.List(ctx, &evs, client.InNamespace(r.Namespace), client.MatchingFields{"involvedObject.name": prime.Name}); err != nil {
		return "", err
	}
	var last *corev1.Event
	for i := range evs.Items {
		e := &evs.Items[i]
		if e.InvolvedObject.UID == prime.UID && e.Reason == "ProvisioningFailed" && (last == nil || eventTime(e).After(eventTime(last))) {
			last = e
		}
	}
	if last == nil {
		return "", nil
	}
	return last.Message, nil
}

// eventTime is when an event last happened.
func eventTime(e *corev1.Event) time.Time {
	if e.Series != nil {
		return e.Series.LastObservedTime.Time
	}
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp.Time
	}
	return e.EventTime.Time
}

// rebind points the prime claim's PV at the user's claim; the PV
// controller then binds them (lib-volume-populator's rebind).
func (r *Reconciler) rebind(ctx context.Context, c *corev1.PersistentVolumeClaim, pvName string) error {
	var pv corev1.PersistentVolume
	if err := r.Client.Get(ctx, types.NamespacedName{Name: pvName}, &pv); err != nil {
		return client.IgnoreNotFound(err)
	}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Namespace != r.Namespace || pv.Spec.ClaimRef.Name != primeName(c.UID) {
		return nil // rebound already
	}
	patch := client.MergeFrom(pv.DeepCopy())
	pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: c.Namespace, Name: c.Name, UID: c.UID}
	if pv.Annotations == nil {
		pv.Annotations = map[string]string{}
	}
	pv.Annotations[AnnPopulatedFrom] = forClaim(c)
	klog.InfoS("rebinding the restored volume to the user's claim", "pv", pvName, "claim", forClaim(c))
	return r.Client.Patch(ctx, &pv, patch)
}

// finish cleans up after the user's claim is bound and records the
// backup the driver restored.
func (r *Reconciler) finish(ctx context.Context, c *corev1.PersistentVolumeClaim) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(c, Finalizer) {
		return ctrl.Result{}, nil
	}
	if gone, err := r.cleanup(ctx, c.UID); err != nil || !gone {
		return r.poll(), err
	}
	var pv corev1.PersistentVolume
	resolved := ""
	if err := r.Client.Get(ctx, types.NamespacedName{Name: c.Spec.VolumeName}, &pv); err == nil && pv.Spec.CSI != nil {
		resolved = pv.Spec.CSI.VolumeAttributes["restoredFrom"]
	}
	var src BackupSource
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: c.Spec.DataSourceRef.Name}, &src); err == nil {
		r.setStatus(ctx, &src, c, "", resolved, true, ReasonPopulated, "bound to "+c.Spec.VolumeName)
	}
	r.say(c, corev1.EventTypeNormal, ReasonPopulated, fmt.Sprintf("%s restored from %s into %s", member(c.Name), resolved, c.Spec.VolumeName))
	r.forget(c.UID)
	controllerutil.RemoveFinalizer(c, Finalizer)
	return ctrl.Result{}, r.Client.Update(ctx, c)
}

// release removes everything made for a claim being deleted, then lets it
// go; until the prime objects are gone it looks again.
func (r *Reconciler) release(ctx context.Context, c *corev1.PersistentVolumeClaim) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(c, Finalizer) {
		return ctrl.Result{}, nil
	}
	if gone, err := r.cleanup(ctx, c.UID); err != nil || !gone {
		return r.poll(), err
	}
	var src BackupSource
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: c.Spec.DataSourceRef.Name}, &src); err == nil {
		r.dropStatus(ctx, &src, c.UID)
	}
	r.forget(c.UID)
	controllerutil.RemoveFinalizer(c, Finalizer)
	return ctrl.Result{}, r.Client.Update(ctx, c)
}

// fail reports a permanent failure on the claim and in the source's
// status, and starts removing the prime objects (abandon goes on until
// they are gone): no prime claim or PV is left.
func (r *Reconciler) fail(ctx context.Context, c *corev1.PersistentVolumeClaim, src *BackupSource, bref, reason, msg string) (ctrl.Result, error) {
	r.say(c, corev1.EventTypeWarning, reason, fmt.Sprintf("%s: %s; not retried: fix the %s or the class and re-create the claim", member(c.Name), msg, Kind))
	r.setStatus(ctx, src, c, bref, "", false, reason, msg)
	r.mu.Lock()
	if r.stop == nil {
		r.stop = map[types.UID]int64{}
	}
	r.stop[c.UID] = src.Generation
	r.mu.Unlock()
	return r.abandon(ctx, c)
}

// abandon winds down a claim that failed for good: its prime objects are
// removed (looked at again until they are gone), then its finalizer.
func (r *Reconciler) abandon(ctx context.Context, c *corev1.PersistentVolumeClaim) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(c, Finalizer) {
		return ctrl.Result{}, nil
	}
	if gone, err := r.cleanup(ctx, c.UID); err != nil || !gone {
		return r.poll(), err
	}
	controllerutil.RemoveFinalizer(c, Finalizer)
	return ctrl.Result{}, r.Client.Update(ctx, c)
}

// class returns the claim's StorageClass and whether it is this driver's.
func (r *Reconciler) class(ctx context.Context, c *corev1.PersistentVolumeClaim) (*storagev1.StorageClass, bool, error) {
	if c.Spec.StorageClassName == nil || *c.Spec.StorageClassName == "" {
		r.say(c, corev1.EventTypeWarning, ReasonRestoreFailed, "the claim names no StorageClass; name a class of "+r.Driver)
		return nil, false, nil
	}
	var sc storagev1.StorageClass
	if err := r.Client.Get(ctx, types.NamespacedName{Name: *c.Spec.StorageClassName}, &sc); err != nil {
		return nil, false, client.IgnoreNotFound(err)
	}
	return &sc, sc.Provisioner == r.Driver, nil
}

// anyNode picks a node running the driver for a class that binds
// immediately (the node-deployment provisioners provision only claims
// with a selected node).
func (r *Reconciler) anyNode(ctx context.Context) (string, error) {
	var nodes storagev1.CSINodeList
	if err := r.Reader.List(ctx, &nodes); err != nil {
		return "", err
	}
	for _, n := range nodes.Items {
		for _, d := range n.Spec.Drivers {
			if d.Name == r.Driver {
				return n.Name, nil
			}
		}
	}
	return "", fmt.Errorf("no node runs %s", r.Driver)
}

// say records an event on the claim unless it is the last one said.
func (r *Reconciler) say(c *corev1.PersistentVolumeClaim, kind, reason, msg string) {
	r.mu.Lock()
	if r.said == nil {
		r.said = map[types.UID]string{}
	}
	dup := r.said[c.UID] == reason+msg
	r.said[c.UID] = reason + msg
	r.mu.Unlock()
	if !dup {
		r.Events.Event(c, kind, reason, msg)
	}
}

// forget drops the memory of a claim's last event and failure.
func (r *Reconciler) forget(uid types.UID) {
	r.mu.Lock()
	delete(r.said, uid)
	delete(r.stop, uid)
	r.mu.Unlock()
}

// stoppedAt reports whether this process saw claim uid fail for good at
// source generation gen (the cache may not show the status yet).
func (r *Reconciler) stoppedAt(uid types.UID, gen int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	g, ok := r.stop[uid]
	return ok && g == gen
}
