// Command helmtemplate renders a Helm chart as `helm template` does, with
// Helm's own Go library (helm.sh/helm/v3), for machines without the helm
// CLI: test/cluster installs charts/chainvol through it
// (`helmtemplate -n NS -f values.yaml --set k=v CHART | kubectl apply -f -`).
// Objects go to stdout as one YAML stream in file-name order, each after a
// "# Source:" comment, as helm prints them. Values are checked against the
// chart's values.schema.json first, as helm template does (an unknown key or
// a malformed backup target fails, naming the key). docs/deploy.md "With
// Helm" documents it for users.
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"
)

func main() {
	var files, sets []string
	ns := flag.String("n", "default", "release namespace")
	name := flag.String("name", "chainvol", "release name")
	flag.Func("f", "values file (repeatable; later ones win)", appendTo(&files))
	flag.Func("set", "KEY=VALUE as helm --set (repeatable; after the files)", appendTo(&sets))
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: helmtemplate [-n NS] [-f values.yaml] [--set k=v] CHART_DIR")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *name, *ns, files, sets); err != nil {
		fmt.Fprintln(os.Stderr, "helmtemplate:", err)
		os.Exit(1)
	}
}

// appendTo is a repeatable flag's setter: each value is appended to *l.
func appendTo(l *[]string) func(string) error {
	return func(v string) error { *l = append(*l, v); return nil }
}

func run(dir, name, ns string, files, sets []string) error {
	ch, err := loader.Load(dir)
	if err != nil {
		return err
	}
	vals := map[string]any{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var v map[string]any
		if err := yaml.Unmarshal(data, &v); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		vals = chartutil.CoalesceTables(v, vals)
	}
	for _, s := range sets {
		if err := strvals.ParseInto(s, vals); err != nil {
			return fmt.Errorf("--set %s: %w", s, err)
		}
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: name, Namespace: ns, Revision: 1, IsInstall: true},
		chartutil.DefaultCapabilities)
	if err != nil {
		return err
	}
	out, err := engine.Render(ch, rv)
	if err != nil {
		return err
	}
	for _, f := range slices.Sorted(maps.Keys(out)) {
		if body := strings.TrimSpace(out[f]); body != "" && strings.HasSuffix(f, ".yaml") {
			fmt.Printf("---\n# Source: %s\n%s\n", f, body)
		}
	}
	return nil
}
