package main

import (
	"strings"
	"testing"
)

// TestRefusesBadValues: helmtemplate, the renderer for machines without
// helm, checks values.schema.json as helm template does: a misspelt key or
// a target without a name fails, naming the key, before anything renders.
func TestRefusesBadValues(t *testing.T) {
	for _, c := range []struct{ set, want string }{
		{"imagee.tag=v1", "additional properties 'imagee' not allowed"},
		{"backup.targets[0].url=s3://bkt/p", "at '/backup/targets/0': missing property 'name'"},
	} {
		err := run("../../charts/chainvol", "chainvol", "chainvol-system", nil, []string{c.set})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--set %s: %v; want an error saying %q", c.set, err, c.want)
		}
	}
	if err := run("../../charts/chainvol", "chainvol", "chainvol-system", []string{"../../test/cluster/values.yaml"},
		[]string{"image.tag=v1.2.3", "backup.targets[0].name=s3", "backup.targets[0].url=s3://bkt/p?endpoint=h:9000"}); err != nil {
		t.Errorf("good values: %v", err)
	}
}
