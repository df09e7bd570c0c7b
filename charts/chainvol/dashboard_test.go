package chainvol_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// dashboardConfigMap returns the rendered Grafana dashboard ConfigMap, nil
// when none is rendered.
func dashboardConfigMap(t *testing.T, values map[string]any) *corev1.ConfigMap {
	t.Helper()
	for _, o := range render(t, values) {
		if cm, ok := o.Obj.(*corev1.ConfigMap); ok && cm.Name == "chainvol-grafana-dashboard" {
			return cm
		}
	}
	return nil
}

// TestChartGrafanaDashboard: metrics.grafanaDashboard.enabled renders
// dashboards/chainvol.json, unchanged and valid JSON, in a ConfigMap with
// the grafana_dashboard label Grafana's sidecar looks for, plus the labels
// and annotations given; off by default. (pkg/driver/dashboard_test.go
// checks its queries against docs/metrics.md and a scrape of the driver.)
func TestChartGrafanaDashboard(t *testing.T) {
	if cm := dashboardConfigMap(t, nil); cm != nil {
		t.Error("the dashboard ConfigMap renders by default; it is opt-in")
	}
	cm := dashboardConfigMap(t, map[string]any{"metrics": map[string]any{"grafanaDashboard": map[string]any{
		"enabled": true, "labels": map[string]any{"team": "storage"}, "annotations": map[string]any{"grafana_folder": "Storage"}}}})
	if cm == nil {
		t.Fatal("metrics.grafanaDashboard.enabled renders no ConfigMap chainvol-grafana-dashboard")
	}
	if cm.Labels["grafana_dashboard"] != "1" || cm.Labels["team"] != "storage" || cm.Annotations["grafana_folder"] != "Storage" {
		t.Errorf("labels %v, annotations %v", cm.Labels, cm.Annotations)
	}
	want, err := os.ReadFile("dashboards/chainvol.json")
	if err != nil {
		t.Fatal(err)
	}
	got := cm.Data["chainvol.json"]
	if got != strings.TrimSpace(string(want)) {
		t.Error("the ConfigMap's chainvol.json differs from dashboards/chainvol.json")
	}
	var d struct {
		UID    string
		Panels []struct{ Title string }
	}
	if err := json.Unmarshal([]byte(got), &d); err != nil || d.UID != "chainvol" || len(d.Panels) < 10 {
		t.Errorf("dashboard JSON: %v, uid %q, %d panels", err, d.UID, len(d.Panels))
	}
}
