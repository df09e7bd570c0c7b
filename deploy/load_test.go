package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// manifest is one YAML document under deploy/, decoded into its API type.
type manifest struct {
	Path  string // slash-separated, relative to deploy/
	Doc   int    // 0-based document index within the file
	Key   string // "apiVersion/Kind"
	Obj   any    // pointer to the typed object
	Patch bool   // listed under patches: in a kustomization, so partial
}

// String names the document for failure messages.
func (m manifest) String() string { return fmt.Sprintf("%s#%d (%s)", m.Path, m.Doc, m.Key) }

// kustomization is the subset of kustomize.config.k8s.io/v1beta1 this tree
// uses; decoding is strict, so a new field must be added here on purpose.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace,omitempty"`
	Resources  []string `json:"resources,omitempty"`
	Patches    []struct {
		Path string `json:"path"`
	} `json:"patches,omitempty"`
}

// types maps apiVersion/kind to a constructor of the Go type it must decode
// into. A kind missing here fails the test rather than going unchecked.
var types = map[string]func() any{
	"v1/Namespace":             func() any { return &corev1.Namespace{} },
	"v1/ServiceAccount":        func() any { return &corev1.ServiceAccount{} },
	"v1/Secret":                func() any { return &corev1.Secret{} },
	"v1/Service":               func() any { return &corev1.Service{} },
	"v1/PersistentVolumeClaim": func() any { return &corev1.PersistentVolumeClaim{} },
	"apps/v1/DaemonSet":        func() any { return &appsv1.DaemonSet{} },
	"rbac.authorization.k8s.io/v1/ClusterRole":         func() any { return &rbacv1.ClusterRole{} },
	"rbac.authorization.k8s.io/v1/ClusterRoleBinding":  func() any { return &rbacv1.ClusterRoleBinding{} },
	"rbac.authorization.k8s.io/v1/Role":                func() any { return &rbacv1.Role{} },
	"rbac.authorization.k8s.io/v1/RoleBinding":         func() any { return &rbacv1.RoleBinding{} },
	"storage.k8s.io/v1/CSIDriver":                      func() any { return &storagev1.CSIDriver{} },
	"storage.k8s.io/v1/StorageClass":                   func() any { return &storagev1.StorageClass{} },
	"snapshot.storage.k8s.io/v1/VolumeSnapshotClass":   func() any { return &snapv1.VolumeSnapshotClass{} },
	"snapshot.storage.k8s.io/v1/VolumeSnapshotContent": func() any { return &snapv1.VolumeSnapshotContent{} },
	"snapshot.storage.k8s.io/v1/VolumeSnapshot":        func() any { return &snapv1.VolumeSnapshot{} },
	"kustomize.config.k8s.io/v1beta1/Kustomization":    func() any { return &kustomization{} },
	"apps/v1/Deployment":                               func() any { return &appsv1.Deployment{} },
	"apiextensions.k8s.io/v1/CustomResourceDefinition": func() any { return &apiextv1.CustomResourceDefinition{} },
}

var loaded struct {
	once sync.Once
	ms   []manifest
	err  error
}

// manifests returns every document of every .yaml file under deploy/,
// decoded strictly; it fails the test on the first file that does not.
func manifests(t *testing.T) []manifest {
	t.Helper()
	loaded.once.Do(func() { loaded.ms, loaded.err = loadTree(".") })
	if loaded.err != nil {
		t.Fatal(loaded.err)
	}
	return loaded.ms
}

// loadTree walks root for *.yaml and *.yml files, in path order, then marks
// the documents that kustomizations list as patches.
func loadTree(root string) ([]manifest, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, filepath.ToSlash(p))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var all []manifest
	for _, f := range files {
		ms, err := loadFile(f)
		if err != nil {
			return nil, err
		}
		all = append(all, ms...)
	}
	patches := map[string]bool{}
	for _, m := range all {
		if k, ok := m.Obj.(*kustomization); ok {
			for _, p := range k.Patches {
				patches[pathJoin(dirOf(m.Path), p.Path)] = true
			}
		}
	}
	for i := range all {
		all[i].Patch = patches[all[i].Path]
	}
	return all, nil
}

// loadFile splits a file into YAML documents and decodes each one.
func loadFile(path string) ([]manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var out []manifest
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s#%d: %w", path, i, err)
		}
		m, empty, err := decodeStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("%s#%d: %w", path, i, err)
		}
		if !empty {
			m.Path, m.Doc = path, i
			out = append(out, m)
		}
	}
}

// decodeStrict turns one YAML document into its typed object, rejecting
// duplicate keys, unknown fields and trailing data. A document holding only
// comments is reported as empty.
func decodeStrict(doc []byte) (manifest, bool, error) {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return manifest{}, false, err
	}
	if s := strings.TrimSpace(string(js)); s == "null" || s == "" {
		return manifest{}, true, nil
	}
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(js, &tm); err != nil {
		return manifest{}, false, err
	}
	key := tm.APIVersion + "/" + tm.Kind
	newObj, ok := types[key]
	if !ok {
		return manifest{}, false, fmt.Errorf("no Go type registered for %q", key)
	}
	obj := newObj()
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return manifest{}, false, fmt.Errorf("%s: %w", key, err)
	}
	if dec.More() {
		return manifest{}, false, fmt.Errorf("%s: trailing data after the object", key)
	}
	return manifest{Key: key, Obj: obj}, false, nil
}

// dirOf and pathJoin work on slash-separated paths relative to deploy/.
func dirOf(p string) string       { return filepath.ToSlash(filepath.Dir(p)) }
func pathJoin(a, b string) string { return filepath.ToSlash(filepath.Clean(filepath.Join(a, b))) }

// objectsOf returns the decoded objects of type T, skipping patches unless
// withPatches, with the manifests they came from.
func objectsOf[T any](t *testing.T, withPatches bool) ([]*T, []manifest) {
	t.Helper()
	var objs []*T
	var from []manifest
	for _, m := range manifests(t) {
		if o, ok := m.Obj.(*T); ok && (withPatches || !m.Patch) {
			objs = append(objs, o)
			from = append(from, m)
		}
	}
	return objs, from
}
