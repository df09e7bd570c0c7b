package driver

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// chainOwner is the owner the driver records on the chains it writes
// (s3chain.BackupOptions.Owner): "cluster/" and the cluster's id, given
// (-cluster-id) or read from the cluster; "" outside a cluster, which
// records and checks no owner. In a cluster whose id cannot be read the
// driver does not start: running on without an owner would silently stop
// refusing another cluster's writes. Errors: the API server's, named.
func chainOwner(clusterID string) (string, error) {
	if clusterID == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			klog.InfoS("not in a cluster and no -cluster-id: chains record no owner, so another cluster's driver on the same target is not refused")
			return "", nil
		}
		if clusterID, err = clusterUID(cfg); err != nil {
			return "", err
		}
	}
	klog.InfoS("chains are recorded as owned by this cluster", "owner", "cluster/"+clusterID)
	return "cluster/" + clusterID, nil
}

// clusterUID is the UID of the kube-system namespace, the customary stable
// id of a cluster (it lives as long as the cluster), read with a few
// retries. Errors: the last read's, with the fix.
func clusterUID(cfg *rest.Config) (string, error) {
	client, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return "", fmt.Errorf("cluster id: %w", err)
	}
	wait := time.Second
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ns, err := client.Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
		cancel()
		if err == nil {
			return string(ns.UID), nil
		}
		if try == 4 {
			return "", fmt.Errorf("cluster id: reading the kube-system namespace failed (%w); the chart's RBAC grants get on it, or set -cluster-id", err)
		}
		klog.ErrorS(err, "reading the cluster id, trying again", "in", wait)
		time.Sleep(wait)
		wait *= 2
	}
}
