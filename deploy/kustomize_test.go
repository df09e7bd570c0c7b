package deploy

import (
	"os"
	"path"
	"strings"
	"testing"
)

// TestKustomizations checks every kustomization's references exist (a
// resource is a file or a directory holding a kustomization.yaml), and that
// every YAML file under deploy/ is listed by some kustomization, so nothing
// ships that `kubectl apply -k` would never apply.
func TestKustomizations(t *testing.T) {
	listed := map[string]bool{}
	kusts, from := objectsOf[kustomization](t, false)
	if len(kusts) == 0 {
		t.Fatal("no kustomization.yaml under deploy/")
	}
	for i, k := range kusts {
		dir := dirOf(from[i].Path)
		if path.Base(from[i].Path) != "kustomization.yaml" {
			t.Errorf("%s: a Kustomization must be named kustomization.yaml", from[i].Path)
		}
		refs := append([]string{}, k.Resources...)
		for _, p := range k.Patches {
			if p.Path == "" {
				t.Errorf("%s: patch without path (inline patches are not used here)", from[i].Path)
			}
			refs = append(refs, p.Path)
		}
		for _, r := range refs {
			if strings.Contains(r, "://") {
				t.Errorf("%s: remote resource %q; keep the tree self-contained", from[i].Path, r)
				continue
			}
			p := pathJoin(dir, r)
			st, err := os.Stat(p)
			switch {
			case err != nil:
				t.Errorf("%s: resource %q: %v", from[i].Path, r, err)
			case st.IsDir():
				if _, err := os.Stat(path.Join(p, "kustomization.yaml")); err != nil {
					t.Errorf("%s: directory resource %q has no kustomization.yaml", from[i].Path, r)
				}
			default:
				listed[p] = true
			}
		}
		if k.Namespace != "" {
			checkNamespaces(t, from[i].Path, k.Namespace, k.Resources, dir)
		}
	}
	for _, m := range manifests(t) {
		if path.Base(m.Path) != "kustomization.yaml" && !listed[m.Path] {
			t.Errorf("%s is not listed in any kustomization.yaml", m.Path)
		}
	}
}

// checkNamespaces requires the namespaced objects of a kustomization's own
// files to already carry its namespace, so `kubectl apply -f` of a single
// file lands in the same place as `kubectl apply -k`.
func checkNamespaces(t *testing.T, kpath, ns string, resources []string, dir string) {
	t.Helper()
	files := map[string]bool{}
	for _, r := range resources {
		files[pathJoin(dir, r)] = true
	}
	for _, m := range manifests(t) {
		if !files[m.Path] {
			continue
		}
		meta, ok := objectMeta(m.Obj)
		if !ok || clusterScoped[m.Key] {
			continue
		}
		if meta.GetNamespace() != ns {
			t.Errorf("%s: namespace %q, but %s sets %q", m, meta.GetNamespace(), kpath, ns)
		}
	}
}
