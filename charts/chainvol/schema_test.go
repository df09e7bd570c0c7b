package chainvol_test

import (
	"os"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// validate is the check `helm install` and `helm template` make before
// rendering: values (over values.yaml) against values.schema.json, with
// Helm's own library.
func validate(t *testing.T, values map[string]any) error {
	t.Helper()
	ch, err := loader.Load(".")
	if err != nil {
		t.Fatal(err)
	}
	if ch.Schema == nil {
		t.Fatal("the chart has no values.schema.json")
	}
	_, err = chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "chainvol", Namespace: "chainvol-system",
		Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities)
	return err
}

func target(name, url string) map[string]any {
	return map[string]any{"backup": map[string]any{"targets": []any{map[string]any{"name": name, "url": url}}}}
}

// goodURLs and badURLs: target URLs the schema must accept and refuse;
// the test also holds each to the driver's own parser (store.CheckURL), so
// the chart and chainvol-csi -backup-target agree.
var (
	goodURLs = []string{
		"file:///var/lib/chainvol/backups",
		"s3://chainvol-backups",
		"s3://chainvol-backups/cluster-a",
		"s3://chainvol-backups/cluster-a/?endpoint=minio.storage.svc:9000&region=us-east-1&insecure=true",
		"s3://bkt/c?endpoint=s3.example:443&ca=/etc/chainvol/ca/ca.pem&style=virtual&imds=true",
	}
	badURLs = []string{
		"",
		"chainvol-backups/cluster-a",         // no scheme
		"/var/lib/chainvol/backups",          // a directory, not a file:/// URL
		"https://s3.amazonaws.com/bkt/p",     // not s3://
		"s3:/bkt/p",                          // one slash
		"s3://Bad_Bucket/p",                  // bucket naming rules
		"s3://bk/p",                          // a bucket is 3-63 characters
		"s3://AKIA:secret@bkt/p",             // credentials in the URL
		"file://relative/dir",                // host instead of a path
		"file:///",                           // the root directory
		"file:///var/lib/chainvol?mode=x",    // file URLs take no query
		"s3://bkt/p with space?endpoint=h:1", // whitespace
		"=s3://bkt/p",                        // a whole NAME=URL in url
		"s3://bkt/p#frag",                    // fragment
		"file:///var/lib/chainvol/backups\n", // trailing newline from a heredoc
	}
)

// TestSchemaAcceptsGoodValues: the defaults, every values file the
// repository renders the chart with, and well-formed targets pass.
func TestSchemaAcceptsGoodValues(t *testing.T) {
	if err := validate(t, nil); err != nil {
		t.Errorf("defaults: %v", err)
	}
	for _, f := range []string{"../../test/cluster/values.yaml", "../../test/cluster/storage/values-s3.yaml"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := yaml.Unmarshal(data, &v); err != nil {
			t.Fatal(err)
		}
		if err := validate(t, v); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, u := range goodURLs {
		if err := validate(t, target("s3", u)); err != nil {
			t.Errorf("target url %q refused: %v", u, err)
		}
		if err := store.CheckURL(u); err != nil {
			t.Errorf("the schema accepts %q, the driver refuses it: %v", u, err)
		}
	}
	for _, n := range []string{"s3", "a", "offsite-2", "0123456789abcdef"} {
		if err := validate(t, target(n, goodURLs[0])); err != nil {
			t.Errorf("target name %q refused: %v", n, err)
		}
	}
}

// TestSchemaRefusesBadValues: misspelt keys at every level and malformed
// targets fail at helm template time, with a message naming the key
// (issue 33: imagee.tag was ignored; a target without a name rendered
// -backup-target==s3://b/p and every node pod crash-looped).
func TestSchemaRefusesBadValues(t *testing.T) {
	for _, c := range []struct {
		values map[string]any
		want   []string // in the error: the key's path and what is wrong
	}{
		{map[string]any{"imagee": map[string]any{"tag": "v1"}}, []string{"'imagee'", "not allowed"}},
		{map[string]any{"image": map[string]any{"tagg": "v1"}}, []string{"/image", "'tagg'"}},
		{map[string]any{"image": map[string]any{"tag": "v1 beta"}}, []string{"/image/tag"}},
		{map[string]any{"backup": map[string]any{"target": []any{}}}, []string{"/backup", "'target'"}},
		{map[string]any{"backup": map[string]any{"targets": []any{map[string]any{"url": "s3://bkt/p"}}}}, []string{"/backup/targets/0", "name"}},
		{map[string]any{"backup": map[string]any{"targets": []any{map[string]any{"name": "s3", "url": "s3://bkt/p", "default": true}}}}, []string{"/backup/targets/0", "'default'"}},
		{map[string]any{"backup": map[string]any{"targets": []any{"s3=s3://bkt/p"}}}, []string{"/backup/targets/0", "object"}},
		{target("", "s3://bkt/p"), []string{"/backup/targets/0/name"}},
		{target("S3", "s3://bkt/p"), []string{"/backup/targets/0/name"}},
		{target("a-very-long-target-name", "s3://bkt/p"), []string{"/backup/targets/0/name"}},
		{map[string]any{"driver": map[string]any{"shutdownTimeout": "20"}}, []string{"/driver/shutdownTimeout"}},
		{map[string]any{"driver": map[string]any{"extraArgs": []any{"gc-delay=2s"}}}, []string{"/driver/extraArgs/0"}},
		{map[string]any{"driver": map[string]any{"resources": map[string]any{"request": map[string]any{}}}}, []string{"/driver/resources", "'request'"}},
		{map[string]any{"logLevel": "high"}, []string{"/logLevel"}},
		{map[string]any{"driver": map[string]any{"extraEnv": []any{map[string]any{"name": "AWS_REGION", "vaule": "x"}}}}, []string{"/driver/extraEnv/0", "'vaule'"}},
		{map[string]any{"sidecars": map[string]any{"extraEnv": []any{map[string]any{"value": "6443"}}}}, []string{"/sidecars/extraEnv/0", "name"}},
		{map[string]any{"poolDir": "var/lib/chainvol/pool"}, []string{"/poolDir"}},
		{map[string]any{"metrics": map[string]any{"podMonitor": map[string]any{"enable": true}}}, []string{"/metrics/podMonitor", "'enable'"}},
		{map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"backupMaxAge": "1d"}}}, []string{"/metrics/prometheusRule/backupMaxAge"}},
		{map[string]any{"metrics": map[string]any{"grafanaDashboard": map[string]any{"enabled": "yes"}}}, []string{"/metrics/grafanaDashboard/enabled"}},
		{map[string]any{"sidecars": map[string]any{"provisioner": map[string]any{"imag": "x"}}}, []string{"/sidecars/provisioner", "'imag'"}},
		{map[string]any{"sidecars": map[string]any{"registrar": map[string]any{"httpPort": 70000}}}, []string{"/sidecars/registrar/httpPort"}},
	} {
		err := validate(t, c.values)
		if err == nil {
			t.Errorf("%v: accepted", c.values)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: the error does not say %q:\n%v", c.values, w, err)
			}
		}
	}
	for _, u := range badURLs {
		err := validate(t, target("s3", u))
		if err == nil || !strings.Contains(err.Error(), "/backup/targets/0/url") {
			t.Errorf("target url %q: %v; want a refusal naming /backup/targets/0/url", u, err)
		}
		if store.CheckURL(u) == nil {
			t.Errorf("the schema refuses %q but the driver accepts it; keep the two in step", u)
		}
	}
}
