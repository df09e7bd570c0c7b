package main

import (
	"fmt"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// kubeClients are the clients of the core API (claims) and of the
// VolumeSnapshot API for the cluster kubeConfig finds; they connect on
// their first call.
func kubeClients(kubeconfig string) (*corev1client.CoreV1Client, *snapclient.Clientset, error) {
	cfg, err := kubeConfig(kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	snaps, err := snapclient.NewForConfig(cfg)
	return core, snaps, err
}

// kubeConfig finds the cluster like kubectl: the flag, $KUBECONFIG,
// ~/.kube/config, else the in-cluster service account.
func kubeConfig(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
}
