package main

import (
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// TestPluginCapName: both arms of the plugin capability oneof are named by
// their own getter (issue 20: expansion came out as UNKNOWN).
func TestPluginCapName(t *testing.T) {
	for _, tc := range []struct {
		c    *csi.PluginCapability
		want string
	}{
		{&csi.PluginCapability{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{
			Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}}}, "CONTROLLER_SERVICE"},
		{&csi.PluginCapability{Type: &csi.PluginCapability_VolumeExpansion_{VolumeExpansion: &csi.PluginCapability_VolumeExpansion{
			Type: csi.PluginCapability_VolumeExpansion_ONLINE}}}, "VOLUME_EXPANSION_ONLINE"},
		{&csi.PluginCapability{Type: &csi.PluginCapability_VolumeExpansion_{VolumeExpansion: &csi.PluginCapability_VolumeExpansion{
			Type: csi.PluginCapability_VolumeExpansion_OFFLINE}}}, "VOLUME_EXPANSION_OFFLINE"},
		{&csi.PluginCapability{}, "UNKNOWN"},
	} {
		if got := pluginCapName(tc.c); got != tc.want {
			t.Errorf("pluginCapName(%v) = %q, want %q", tc.c, got, tc.want)
		}
	}
}
