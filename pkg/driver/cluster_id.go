package driver

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// chainOwner is the owner the driver records on the chains it writes
// (s3chain.BackupOptions.Owner): "cluster/" and the cluster's id, given
// (-cluster-id) or read from the cluster; "" when neither is known (outside
// a cluster), which records and checks no owner.
func chainOwner(clusterID string) string {
	if clusterID == "" {
		clusterID = clusterUID()
	}
	if clusterID == "" {
		klog.InfoS("no cluster id (-cluster-id, or the kube-system namespace's UID in a cluster): chains record no owner, so another cluster's driver on the same target is not refused")
		return ""
	}
	klog.InfoS("chains are recorded as owned by this cluster", "owner", "cluster/"+clusterID)
	return "cluster/" + clusterID
}

// clusterUID is the UID of the kube-system namespace, the customary stable
// id of a cluster (it lives as long as the cluster), or "" outside a
// cluster or when it cannot be read within a few seconds.
func clusterUID() string {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return ""
	}
	client, err := corev1client.NewForConfig(cfg)
	if err != nil {
		klog.ErrorS(err, "no cluster id")
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ns, err := client.Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		klog.ErrorS(err, "no cluster id: reading the kube-system namespace failed (the chart's RBAC grants get on it); set -cluster-id")
		return ""
	}
	return string(ns.UID)
}
