package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// kustomization is the part of a kustomization.yaml that names files.
type kustomization struct {
	Resources []string `json:"resources"`
	Patches   []struct {
		Path string `json:"path"`
	} `json:"patches"`
}

// ImageKustomizations returns the kustomization directories under root
// (relative to it, slash-separated, sorted) whose build runs an image of
// repo: a file they list (resource or patch) names "repo:", or a directory
// they list does. Errors: an unreadable tree or kustomization.
func ImageKustomizations(root, repo string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "kustomization.yaml" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	memo := map[string]bool{}
	var uses func(dir string) (bool, error)
	uses = func(dir string) (bool, error) {
		if v, ok := memo[dir]; ok {
			return v, nil
		}
		memo[dir] = false // a cycle uses nothing more
		data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
		if err != nil {
			return false, err
		}
		var k kustomization
		if err := yaml.Unmarshal(data, &k); err != nil {
			return false, fmt.Errorf("%s/kustomization.yaml: %w", dir, err)
		}
		refs := k.Resources
		for _, p := range k.Patches {
			refs = append(refs, p.Path)
		}
		for _, r := range refs {
			p := filepath.Join(dir, r)
			st, err := os.Stat(p)
			if err != nil {
				return false, fmt.Errorf("%s/kustomization.yaml: %w", dir, err)
			}
			found := false
			if st.IsDir() {
				found, err = uses(p)
			} else {
				var b []byte
				b, err = os.ReadFile(p)
				found = strings.Contains(string(b), repo+":")
			}
			if err != nil {
				return false, err
			}
			if found {
				memo[dir] = true
				return true, nil
			}
		}
		return false, nil
	}
	var out []string
	for _, d := range dirs {
		ok, err := uses(d)
		if err != nil {
			return nil, err
		}
		if ok {
			r, _ := filepath.Rel(root, d)
			out = append(out, filepath.ToSlash(r))
		}
	}
	slices.Sort(out)
	return out, nil
}
