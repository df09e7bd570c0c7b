package chainvol_test

import (
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
)

// TestChartOneVeleroClass: whatever the chart renders holds at most one
// VolumeSnapshotClass labelled for Velero, and exactly one when it renders
// any class (deploy/velero_test.go checks the same of every example set).
// Today the chart renders no class: the classes are deploy/examples'.
func TestChartOneVeleroClass(t *testing.T) {
	for _, values := range []map[string]any{nil, allOn} {
		classes, labelled := 0, 0
		for _, o := range render(t, values) {
			if c, ok := o.Obj.(*snapv1.VolumeSnapshotClass); ok {
				classes++
				if c.Labels["velero.io/csi-volumesnapshot-class"] == "true" {
					labelled++
				}
			}
		}
		if labelled > 1 || (classes > 0 && labelled != 1) {
			t.Errorf("values %v: %d VolumeSnapshotClasses, %d labelled for Velero; want exactly one labelled", values, classes, labelled)
		}
	}
}

// allOn turns on every optional object of the chart.
var allOn = map[string]any{
	"namespace": map[string]any{"create": true},
	"metrics": map[string]any{
		"podMonitor":       map[string]any{"enabled": true},
		"prometheusRule":   map[string]any{"enabled": true},
		"grafanaDashboard": map[string]any{"enabled": true},
	},
	"sidecars": map[string]any{"snapshotter": map[string]any{"groupSnapshots": true}},
}
