// Package chainvol_test renders the Helm chart with Helm's own Go library
// and decodes every object strictly, as deploy/'s tests decode deploy/.
package chainvol_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// object is one rendered document decoded into its Go type.
type object struct {
	Key, Source string // "apiVersion/Kind", template file
	Obj         any
}

// podMonitor and prometheusRule are the subset of prometheus-operator's
// monitoring.coreos.com/v1 types the chart uses; decoding is strict, so a
// misspelt field fails.
type podMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector            metav1.LabelSelector `json:"selector"`
		PodMetricsEndpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

type prometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// volumePopulator is populator.storage.k8s.io/v1beta1's VolumePopulator
// (the volume-data-source-validator's kind).
type volumePopulator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	SourceKind        metav1.GroupKind `json:"sourceKind"`
}

var types = map[string]func() any{
	"v1/Namespace":                             func() any { return &corev1.Namespace{} },
	"v1/ServiceAccount":                        func() any { return &corev1.ServiceAccount{} },
	"v1/Service":                               func() any { return &corev1.Service{} },
	"v1/ConfigMap":                             func() any { return &corev1.ConfigMap{} },
	"apps/v1/DaemonSet":                        func() any { return &appsv1.DaemonSet{} },
	"storage.k8s.io/v1/CSIDriver":              func() any { return &storagev1.CSIDriver{} },
	"rbac.authorization.k8s.io/v1/ClusterRole": func() any { return &rbacv1.ClusterRole{} },
	"rbac.authorization.k8s.io/v1/ClusterRoleBinding":  func() any { return &rbacv1.ClusterRoleBinding{} },
	"rbac.authorization.k8s.io/v1/Role":                func() any { return &rbacv1.Role{} },
	"rbac.authorization.k8s.io/v1/RoleBinding":         func() any { return &rbacv1.RoleBinding{} },
	"snapshot.storage.k8s.io/v1/VolumeSnapshotClass":   func() any { return &snapv1.VolumeSnapshotClass{} },
	"monitoring.coreos.com/v1/PodMonitor":              func() any { return &podMonitor{} },
	"monitoring.coreos.com/v1/PrometheusRule":          func() any { return &prometheusRule{} },
	"apps/v1/Deployment":                               func() any { return &appsv1.Deployment{} },
	"apiextensions.k8s.io/v1/CustomResourceDefinition": func() any { return &apiextv1.CustomResourceDefinition{} },
	"populator.storage.k8s.io/v1beta1/VolumePopulator": func() any { return &volumePopulator{} },
}

// render renders the chart in this directory as `helm template chainvol
// . -n chainvol-system --set ...` would, with values (nested maps) over
// values.yaml, and decodes every document strictly.
func render(t *testing.T, values map[string]any) []object {
	t.Helper()
	ch, err := loader.Load(".")
	if err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "chainvol", Namespace: "chainvol-system",
		Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	var out []object
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(files[name], -1) {
			o, empty, err := decodeStrict([]byte(doc))
			if err != nil {
				t.Fatalf("%s#%d: %v\n%s", name, i, err, doc)
			}
			if !empty {
				o.Source = name
				out = append(out, o)
			}
		}
	}
	return out
}

// decodeStrict is deploy/load_test.go's: duplicate keys, unknown fields,
// unknown kinds and trailing data are errors.
func decodeStrict(doc []byte) (object, bool, error) {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return object{}, false, err
	}
	if s := strings.TrimSpace(string(js)); s == "null" || s == "" {
		return object{}, true, nil
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return object{}, false, err
	}
	key := tm.APIVersion + "/" + tm.Kind
	newObj, ok := types[key]
	if !ok {
		return object{}, false, fmt.Errorf("no Go type registered for %q", key)
	}
	obj := newObj()
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return object{}, false, fmt.Errorf("%s: %w", key, err)
	}
	if dec.More() {
		return object{}, false, fmt.Errorf("%s: trailing data", key)
	}
	return object{Key: key, Obj: obj}, false, nil
}

// id names an object by kind, namespace and name.
func id(o object) string {
	m := meta(o)
	return o.Key + " " + m.GetNamespace() + "/" + m.GetName()
}

func meta(o object) metav1.Object {
	m, ok := o.Obj.(metav1.Object)
	if !ok {
		panic(fmt.Sprintf("%T has no ObjectMeta", o.Obj))
	}
	return m
}

// helmLabels are the labels the chart adds to deploy/base's.
var helmLabels = []string{"app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version", "helm.sh/chart"}

// loadBase decodes deploy/base's YAML files, kustomization aside.
func loadBase(t *testing.T) []object {
	t.Helper()
	files, err := filepath.Glob("../../deploy/base/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("deploy/base: %v", err)
	}
	var out []object
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
			o, empty, err := decodeStrict([]byte(doc))
			if err != nil {
				t.Fatalf("%s#%d: %v", f, i, err)
			}
			if !empty {
				o.Source = f
				out = append(out, o)
			}
		}
	}
	return out
}

// TestChartDefaultsAreDeployBase: the chart with its defaults (and the
// Namespace, which it leaves to the operator by default) renders exactly
// the objects of deploy/base, field for field, apart from Helm's labels:
// one install, two ways (issue 17).
func TestChartDefaultsAreDeployBase(t *testing.T) {
	chart := map[string]object{}
	for _, o := range render(t, map[string]any{"namespace": map[string]any{"create": true}}) {
		labels := meta(o).GetLabels()
		for _, l := range helmLabels {
			if _, ok := labels[l]; !ok {
				t.Errorf("%s: no %s label", id(o), l)
			}
			delete(labels, l)
		}
		meta(o).SetLabels(labels)
		chart[id(o)] = o
	}
	base := map[string]object{}
	for _, o := range loadBase(t) {
		base[id(o)] = o
	}
	for k, b := range base {
		c, ok := chart[k]
		if !ok {
			t.Errorf("deploy/base has %s (%s); the chart does not render it", k, b.Source)
			continue
		}
		bj, _ := json.MarshalIndent(b.Obj, "", " ")
		cj, _ := json.MarshalIndent(c.Obj, "", " ")
		if !bytes.Equal(bj, cj) {
			t.Errorf("%s differs between %s and the chart's %s:\n%s", k, b.Source, c.Source, diff(string(bj), string(cj)))
		}
	}
	for k, c := range chart {
		if _, ok := base[k]; !ok {
			t.Errorf("the chart's %s renders %s, which deploy/base lacks", c.Source, k)
		}
	}
}

// diff shows the first differing lines of two JSON renderings.
func diff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			lo := max(0, i-3)
			return fmt.Sprintf("line %d\n  base:  %s\n  chart: %s\ncontext (base):\n%s", i, x, y, strings.Join(al[lo:min(len(al), i+3)], "\n"))
		}
	}
	return "(equal)"
}
