package driver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// progressEventEvery is the least time between two progress events of one
// restore.
const progressEventEvery = 30 * time.Second

// pvcEvents records Normal events with a running restore's progress on the
// claim being restored, when the driver knows the claim (the provisioner's
// --extra-create-metadata gives its namespace and name, kept as lvol
// labels). The provisioner's own Warning events of the Aborted answers stop
// after about two minutes: client-go's event spam filter allows a burst of
// 25 per object and then one per five minutes. These events bypass that
// filter by writing one Event object per restore through the API and
// updating its message, count and lastTimestamp at most every
// progressEventEvery, so `kubectl describe pvc` shows how far a restore of
// hours is. A nil *pvcEvents (outside a cluster) records nothing.
type pvcEvents struct {
	client corev1client.CoreV1Interface // only core/v1: the whole clientset would add ~20 MB to the binary
	node   string
	mu     sync.Mutex
	state  map[string]*restoreEvent // by volume id
	// send writes an event; write, except in tests of the rate limit.
	send func(*corev1.Event, *restoreEvent) error
}

// restoreEvent is the Event of one restore.
type restoreEvent struct {
	name  string    // Event object name
	uid   types.UID // the claim's uid ("" until read)
	count int32
	first time.Time
	last  time.Time
}

// newPVCEvents uses the in-cluster configuration (the pod's service
// account); outside a cluster it returns nil, which records nothing.
func newPVCEvents(node string) *pvcEvents {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		klog.V(2).InfoS("not in a cluster: no progress events on claims", "reason", err)
		return nil
	}
	client, err := corev1client.NewForConfig(cfg)
	if err != nil {
		klog.ErrorS(err, "no progress events on claims")
		return nil
	}
	e := &pvcEvents{client: client, node: node, state: map[string]*restoreEvent{}}
	e.send = e.write
	return e
}

// restoreProgress records msg (the job's progress message) on lv's claim,
// at most every progressEventEvery per restore, in the background: the
// caller is a CreateVolume about to answer Aborted at its deadline. Errors
// are logged, not returned: events are a courtesy, the restore goes on.
func (e *pvcEvents) restoreProgress(lv backend.LVol, msg string) {
	if e == nil {
		return
	}
	rec := volume.Of(lv)
	ns, name := rec.PVCNamespace, rec.PVCName
	if ns == "" || name == "" {
		return
	}
	now := time.Now()
	e.mu.Lock()
	st := e.state[lv.ID]
	if st == nil {
		st = &restoreEvent{name: restoreEventName(name, lv.ID), first: now}
		e.state[lv.ID] = st
	} else if now.Sub(st.last) < progressEventEvery {
		e.mu.Unlock()
		return
	}
	st.last = now
	st.count++
	ev := e.event(ns, name, st, msg, now)
	e.mu.Unlock()
	go func() {
		if err := e.send(ev, st); err != nil {
			klog.V(2).InfoS("progress event not recorded", "pvc", ns+"/"+name, "err", err)
		}
	}()
}

// restoreDone forgets lv's restore; the next restore of that volume id
// starts a new Event.
func (e *pvcEvents) restoreDone(lv backend.LVol) {
	if e == nil {
		return
	}
	e.mu.Lock()
	delete(e.state, lv.ID)
	e.mu.Unlock()
}

// event builds the Event object for st (called with e.mu held).
func (e *pvcEvents) event(ns, pvc string, st *restoreEvent, msg string, now time.Time) *corev1.Event {
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: st.name, Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: pvc,
			UID: st.uid},
		Reason: "RestoreProgress", Message: msg, Type: corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "chainvol-csi", Host: e.node},
		FirstTimestamp: metav1.NewTime(st.first), LastTimestamp: metav1.NewTime(now), Count: st.count,
		ReportingController: "chainvol.csi.io/chainvol-csi", ReportingInstance: "chainvol-csi-" + e.node,
	}
}

// write creates the Event, or updates it when it exists. The claim's uid
// is read once, so that `kubectl describe pvc` (which selects events by
// uid) lists the event.
func (e *pvcEvents) write(ev *corev1.Event, st *restoreEvent) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if ev.InvolvedObject.UID == "" {
		pvc, err := e.client.PersistentVolumeClaims(ev.Namespace).Get(ctx, ev.InvolvedObject.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("read the claim: %w", err)
		}
		ev.InvolvedObject.UID = pvc.UID
		e.mu.Lock()
		st.uid = pvc.UID
		e.mu.Unlock()
	}
	events := e.client.Events(ev.Namespace)
	if old, err := events.Get(ctx, ev.Name, metav1.GetOptions{}); err == nil {
		ev.ResourceVersion = old.ResourceVersion
		_, err = events.Update(ctx, ev, metav1.UpdateOptions{})
		return err
	}
	_, err := events.Create(ctx, ev, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) { // a concurrent write of the same restore's event
		return nil
	}
	return err
}

// restoreEventName is the Event of the restore of lvol id into claim pvc:
// "PVC.chainvol-restore-HASH", HASH 16 hex digits of the SHA-256 of id, so
// restores of one claim name (a claim deleted and made again) keep their
// own events; the claim's name is cut so that the whole stays a DNS-1123
// subdomain of at most 253 bytes (longer, the API would refuse it).
func restoreEventName(pvc, id string) string {
	h := sha256.Sum256([]byte(id))
	suffix := ".chainvol-restore-" + hex.EncodeToString(h[:8])
	if n := validation.DNS1123SubdomainMaxLength - len(suffix); len(pvc) > n {
		pvc = strings.TrimRight(pvc[:n], "-.")
	}
	return pvc + suffix
}
