package chainvol_test

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestChartPopulator: the populator's Deployment runs chainvol-populator
// from the driver's image with the first target as its default, the
// VolumePopulator is rendered only when asked for, and enabled=false
// renders none of the populator's objects.
func TestChartPopulator(t *testing.T) {
	objs := render(t, map[string]any{
		"image":     map[string]any{"tag": "v9"},
		"backup":    map[string]any{"targets": []any{map[string]any{"name": "offsite", "url": "s3://bucket-a/p?region=x"}}},
		"populator": map[string]any{"volumePopulator": true},
	})
	var dep *appsv1.Deployment
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.Key]++
		if d, ok := o.Obj.(*appsv1.Deployment); ok && d.Name == "chainvol-populator" {
			dep = d
		}
	}
	if dep == nil || kinds["populator.storage.k8s.io/v1beta1/VolumePopulator"] != 1 || kinds["apiextensions.k8s.io/v1/CustomResourceDefinition"] != 1 {
		t.Fatalf("rendered %v", kinds)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if c.Image != "ghcr.io/chainvol/chainvol-csi:v9" || !slices.Equal(c.Command, []string{"/usr/local/bin/chainvol-populator"}) || !slices.Contains(c.Args, "-default-target=offsite") {
		t.Errorf("populator container %s %v %v", c.Image, c.Command, c.Args)
	}
	for _, o := range render(t, map[string]any{"populator": map[string]any{"enabled": false}}) {
		if l := meta(o).GetLabels()["app.kubernetes.io/component"]; l == "populator" || o.Key == "apiextensions.k8s.io/v1/CustomResourceDefinition" {
			t.Errorf("populator disabled but %s rendered", id(o))
		}
	}
}
