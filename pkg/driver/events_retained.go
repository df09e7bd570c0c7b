package driver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// contentsPath lists VolumeSnapshotContents (snapshot.storage.k8s.io/v1,
// cluster-scoped); the pod's service account may (the csi-snapshotter's
// role: get, list, watch).
const contentsPath = "/apis/snapshot.storage.k8s.io/v1/volumesnapshotcontents"

// backupRetained records a Warning event BackupRetained with msg (the
// refusal, naming the retain-until date) on the VolumeSnapshotContent
// whose snapshot handle is id, in the background. A user deleting a
// VolumeSnapshot of a backup under S3 Object Lock sees why nothing
// happens: the csi-snapshotter's own event of a failed DeleteSnapshot
// says only "Failed to delete snapshot" (external-snapshotter v8,
// sidecar deleteCSISnapshotOperation), the error only in its log. One
// Event object per content (its count and last time updated on each
// refusal, as for RestoreProgress). A nil *pvcEvents (outside a cluster)
// records nothing; errors are logged, not returned.
func (e *pvcEvents) backupRetained(id, msg string) {
	if e == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.writeRetained(ctx, id, msg, time.Now()); err != nil {
			klog.V(2).InfoS("no BackupRetained event on the snapshot's content", "snapshot", id, "err", err)
		}
	}()
}

// writeRetained finds the content of id and creates or updates its event.
func (e *pvcEvents) writeRetained(ctx context.Context, id, msg string, now time.Time) error {
	name, uid, err := e.contentOf(ctx, id)
	if err != nil || name == "" {
		return err
	}
	h := sha256.Sum256([]byte(name))
	ev := &corev1.Event{
		// Events of cluster-scoped objects live in "default", as
		// client-go's recorder puts them.
		ObjectMeta: metav1.ObjectMeta{Name: "chainvol-retained-" + hex.EncodeToString(h[:8]), Namespace: metav1.NamespaceDefault},
		InvolvedObject: corev1.ObjectReference{Kind: "VolumeSnapshotContent", APIVersion: "snapshot.storage.k8s.io/v1",
			Name: name, UID: types.UID(uid)},
		Reason: "BackupRetained", Message: msg, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "chainvol-csi", Host: e.node},
		FirstTimestamp: metav1.NewTime(now), LastTimestamp: metav1.NewTime(now), Count: 1,
		ReportingController: "chainvol.csi.io/chainvol-csi", ReportingInstance: "chainvol-csi-" + e.node,
	}
	events := e.client.Events(ev.Namespace)
	if old, err := events.Get(ctx, ev.Name, metav1.GetOptions{}); err == nil {
		ev.ResourceVersion, ev.FirstTimestamp, ev.Count = old.ResourceVersion, old.FirstTimestamp, old.Count+1
		_, err = events.Update(ctx, ev, metav1.UpdateOptions{})
		return err
	}
	_, err = events.Create(ctx, ev, metav1.CreateOptions{})
	return err
}

// contentOf returns the name and uid of the VolumeSnapshotContent whose
// status.snapshotHandle (or spec.source.snapshotHandle, pre-provisioned)
// is id; "" when none. The list is read raw, through the core client's
// REST client: a typed snapshot client would add a module and megabytes.
func (e *pvcEvents) contentOf(ctx context.Context, id string) (string, string, error) {
	raw, err := e.client.RESTClient().Get().AbsPath(contentsPath).SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		return "", "", fmt.Errorf("list VolumeSnapshotContents: %w", err)
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
				UID  string `json:"uid"`
			} `json:"metadata"`
			Spec struct {
				Source struct {
					SnapshotHandle string `json:"snapshotHandle"`
				} `json:"source"`
			} `json:"spec"`
			Status struct {
				SnapshotHandle string `json:"snapshotHandle"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", "", fmt.Errorf("decode VolumeSnapshotContents: %w", err)
	}
	for _, c := range list.Items {
		if c.Status.SnapshotHandle == id || c.Spec.Source.SnapshotHandle == id {
			return c.Metadata.Name, c.Metadata.UID, nil
		}
	}
	return "", "", nil
}
