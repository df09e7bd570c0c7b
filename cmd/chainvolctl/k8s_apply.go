package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snaptyped "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/typed/volumesnapshot/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// errNameTaken marks an object name that an object of another backup holds
// already: that object is left alone and the backup is not imported.
var errNameTaken = errors.New("name taken by another backup")

// applyPairs creates each content and then its snapshot. Objects that
// exist already for the same backup are left as they are (an import can
// be repeated); a name that another backup's object holds is reported and
// the rest still applied, then the command fails naming each (errNameTaken).
// The kubeconfig is found like kubectl's (kubeClients).
func applyPairs(ctx context.Context, log io.Writer, kubeconfig string, pairs []snapshotPair) error {
	_, snaps, err := kubeClients(kubeconfig)
	if err != nil {
		return err
	}
	return applyWith(ctx, log, snaps.SnapshotV1(), pairs)
}

// applyWith is applyPairs on a client (a fake one in tests).
func applyWith(ctx context.Context, log io.Writer, api snaptyped.SnapshotV1Interface, pairs []snapshotPair) error {
	var taken []error
	for _, p := range pairs {
		err := applyPair(ctx, log, api, p)
		if errors.Is(err, errNameTaken) {
			fmt.Fprintf(log, "error: %v\n", err)
			taken = append(taken, err)
		} else if err != nil {
			return err
		}
	}
	if len(taken) > 0 {
		return fmt.Errorf("%d of %d backups not imported: %w", len(taken), len(pairs), errors.Join(taken...))
	}
	return nil
}

// applyPair creates p's content and snapshot unless they exist for its
// backup. The snapshot's name is checked first, so a taken name leaves no
// new content behind; a content already bound to another snapshot name
// (an import by a version that named snapshots differently) keeps it.
func applyPair(ctx context.Context, log io.Writer, api snaptyped.SnapshotV1Interface, p snapshotPair) error {
	snaps := api.VolumeSnapshots(p.Snapshot.Namespace)
	if cur, err := snaps.Get(ctx, p.Snapshot.Name, metav1.GetOptions{}); err == nil {
		if err := sameSnapshot(cur, p); err != nil {
			return err
		}
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("get volumesnapshot %s/%s: %w", p.Snapshot.Namespace, p.Snapshot.Name, err)
	}
	bound, err := ensureContent(ctx, log, api.VolumeSnapshotContents(), p)
	if err != nil || !bound {
		return err
	}
	_, err = snaps.Create(ctx, p.Snapshot, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) { // made since the Get
		cur, gerr := snaps.Get(ctx, p.Snapshot.Name, metav1.GetOptions{})
		if gerr != nil {
			return fmt.Errorf("get volumesnapshot %s/%s: %w", p.Snapshot.Namespace, p.Snapshot.Name, gerr)
		}
		if err := sameSnapshot(cur, p); err != nil {
			return err
		}
	}
	return created(log, err, "volumesnapshot", p.Snapshot.Namespace+"/"+p.Snapshot.Name)
}

// ensureContent creates p's content, or checks that the one of its name
// holds p's handle. It reports whether the content is bound to p's
// snapshot name, i.e. whether that snapshot should be made. Errors:
// errNameTaken for another handle, those of the API.
func ensureContent(ctx context.Context, log io.Writer, api snaptyped.VolumeSnapshotContentInterface, p snapshotPair) (bool, error) {
	_, err := api.Create(ctx, p.Content, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return true, created(log, err, "volumesnapshotcontent", p.Content.Name)
	}
	cur, err := api.Get(ctx, p.Content.Name, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("get volumesnapshotcontent %s: %w", p.Content.Name, err)
	}
	want, have := *p.Content.Spec.Source.SnapshotHandle, cur.Spec.Source.SnapshotHandle
	if have == nil || *have != want {
		return false, fmt.Errorf("%w: volumesnapshotcontent %s exists with snapshotHandle %s, not %s; left as it is (delete it to import this backup)",
			errNameTaken, p.Content.Name, deref(have), want)
	}
	ref := cur.Spec.VolumeSnapshotRef
	if ref.Namespace != p.Snapshot.Namespace || ref.Name != p.Snapshot.Name {
		fmt.Fprintf(log, "volumesnapshotcontent/%s unchanged (exists): backup %s is imported as volumesnapshot %s/%s\n",
			p.Content.Name, want, ref.Namespace, ref.Name)
		return false, nil
	}
	fmt.Fprintf(log, "volumesnapshotcontent/%s unchanged (exists)\n", p.Content.Name)
	return true, nil
}

// sameSnapshot returns nil when the existing snapshot cur is p's: bound to
// p's content, which holds p's backup. Errors: errNameTaken naming the
// backup cur restores (or its source when chainvolctl did not make it).
func sameSnapshot(cur *snapv1.VolumeSnapshot, p snapshotPair) error {
	src := cur.Spec.Source
	if src.VolumeSnapshotContentName != nil && *src.VolumeSnapshotContentName == p.Content.Name {
		return nil
	}
	owner := cur.Annotations[backupAnnotation]
	switch {
	case owner != "":
		owner = "backup " + owner
	case src.PersistentVolumeClaimName != nil:
		owner = "a snapshot of claim " + *src.PersistentVolumeClaimName
	default:
		owner = "content " + deref(src.VolumeSnapshotContentName)
	}
	return fmt.Errorf("%w: volumesnapshot %s/%s exists for %s, not backup %s; left as it is (import into another namespace with --namespace-map, or delete it)",
		errNameTaken, cur.Namespace, cur.Name, owner, p.Snapshot.Annotations[backupAnnotation])
}

// deref is *s, or "none".
func deref(s *string) string {
	if s == nil {
		return "none"
	}
	return *s
}

// created reports one create like kubectl; AlreadyExists (of an object
// checked to be the same backup's) is not an error.
func created(log io.Writer, err error, kind, name string) error {
	switch {
	case err == nil:
		fmt.Fprintf(log, "%s/%s created\n", kind, name)
	case apierrors.IsAlreadyExists(err):
		fmt.Fprintf(log, "%s/%s unchanged (exists)\n", kind, name)
	default:
		return fmt.Errorf("create %s %s: %w", kind, name, err)
	}
	return nil
}
