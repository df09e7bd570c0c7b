package main

import (
	"context"
	"fmt"
	"io"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// applyPairs creates each content and then its snapshot; objects that
// exist already are left as they are (an import can be repeated). The
// kubeconfig is found like kubectl's: the flag, $KUBECONFIG,
// ~/.kube/config, else the in-cluster service account.
func applyPairs(ctx context.Context, log io.Writer, kubeconfig string, pairs []snapshotPair) error {
	cfg, err := kubeConfig(kubeconfig)
	if err != nil {
		return err
	}
	cs, err := snapclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	v1 := cs.SnapshotV1()
	for _, p := range pairs {
		_, err := v1.VolumeSnapshotContents().Create(ctx, p.Content, metav1.CreateOptions{})
		if err = created(log, err, "volumesnapshotcontent", p.Content.Name); err != nil {
			return err
		}
		_, err = v1.VolumeSnapshots(p.Snapshot.Namespace).Create(ctx, p.Snapshot, metav1.CreateOptions{})
		if err = created(log, err, "volumesnapshot", p.Snapshot.Namespace+"/"+p.Snapshot.Name); err != nil {
			return err
		}
	}
	return nil
}

// created reports one create like kubectl; AlreadyExists is not an error.
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
