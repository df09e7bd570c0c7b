package deploy

import (
	"strings"
	"testing"
)

// TestManifestsDecodeStrictly loads every YAML document under deploy/ into
// its k8s.io/api or external-snapshotter type, unknown fields rejected, and
// checks the tree holds the kinds an operator needs.
func TestManifestsDecodeStrictly(t *testing.T) {
	ms := manifests(t)
	count := map[string]int{}
	for _, m := range ms {
		count[m.Key]++
	}
	for _, k := range []string{
		"storage.k8s.io/v1/CSIDriver", "apps/v1/DaemonSet", "v1/ServiceAccount",
		"rbac.authorization.k8s.io/v1/ClusterRole", "rbac.authorization.k8s.io/v1/ClusterRoleBinding",
		"storage.k8s.io/v1/StorageClass", "snapshot.storage.k8s.io/v1/VolumeSnapshotClass",
		"snapshot.storage.k8s.io/v1/VolumeSnapshotContent", "v1/Secret", "v1/Service",
		"kustomize.config.k8s.io/v1beta1/Kustomization",
	} {
		if count[k] == 0 {
			t.Errorf("no %s anywhere under deploy/", k)
		}
	}
	t.Logf("%d documents decoded: %v", len(ms), count)
}

// TestDecodeStrictRejects proves the decoder is strict: each document below
// is valid YAML that a lenient decoder would accept.
func TestDecodeStrictRejects(t *testing.T) {
	cases := map[string]string{
		"unknown field": "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: x}\nspec: {attachRequird: false}\n",
		"duplicate key": "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\nmetadata: {name: b}\n",
		"unknown kind":  "apiVersion: v1\nkind: Frobnicator\nmetadata: {name: x}\n",
		"wrong type":    "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: x}\nspec: {attachRequired: \"no\"}\n",
		"snapshot field typo": "apiVersion: snapshot.storage.k8s.io/v1\nkind: VolumeSnapshotClass\n" +
			"metadata: {name: x}\ndriver: d\ndeletionPolicy: Delete\nparameter: {backup: \"true\"}\n",
		"kustomize field typo": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresource: [a.yaml]\n",
	}
	for name, doc := range cases {
		if _, _, err := decodeStrict([]byte(doc)); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
	m, empty, err := decodeStrict([]byte("# only a comment\n"))
	if err != nil || !empty {
		t.Errorf("comment-only document: empty=%v err=%v, want empty", empty, err)
	}
	m, _, err = decodeStrict([]byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: ok}\n"))
	if err != nil || !strings.HasSuffix(m.Key, "/Namespace") {
		t.Errorf("valid Namespace: key=%q err=%v", m.Key, err)
	}
}
