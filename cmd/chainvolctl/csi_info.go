package main

import (
	"context"
	"io"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
)

// csiInfo gathers what the identity and node services say about the driver.
type csiInfo struct {
	Name          string            `json:"name"`
	Version       string            `json:"version"`
	Ready         bool              `json:"ready"`
	NodeID        string            `json:"nodeId"`
	Topology      map[string]string `json:"topology,omitempty"`
	MaxVolumes    int64             `json:"maxVolumesPerNode"`
	Controller    []string          `json:"controllerCapabilities"`
	NodeFeatures  []string          `json:"nodeCapabilities"`
	PluginService []string          `json:"pluginCapabilities"`
}

func (a *app) newCSIInfoCmd(f *csiFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "info",
		Short:   "Show the driver's name, version, readiness, node id and capabilities",
		Long:    "GetPluginInfo, Probe, GetPluginCapabilities, ControllerGetCapabilities, NodeGetCapabilities and NodeGetInfo in one view: the first thing to run against a node's socket.",
		Example: "  chainvolctl csi --endpoint unix:///tmp/csi.sock info -o json",
		Args:    args(cobra.NoArgs),
		RunE: a.csiCall(f, func(ctx context.Context, cmd *cobra.Command, _ []string, c *csiClient) error {
			info, err := gatherInfo(ctx, c)
			if err != nil {
				return explainCSI(err)
			}
			return a.emit(cmd, info, func(w io.Writer) error {
				tb := newTable(w, "Driver:", info.Name+" "+info.Version)
				tb.row("Ready:", boolWord(info.Ready))
				tb.row("Node:", info.NodeID)
				tb.row("Topology:", strings.Join(sortedKV(info.Topology), ","))
				tb.row("Plugin:", strings.Join(info.PluginService, ", "))
				tb.row("Controller:", strings.Join(info.Controller, ", "))
				tb.row("Node service:", strings.Join(info.NodeFeatures, ", "))
				return tb.flush()
			})
		}),
	}
}

func gatherInfo(ctx context.Context, c *csiClient) (*csiInfo, error) {
	pi, err := c.identity.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil {
		return nil, err
	}
	info := &csiInfo{Name: pi.GetName(), Version: pi.GetVendorVersion()}
	probe, err := c.identity.Probe(ctx, &csi.ProbeRequest{})
	if err != nil {
		return nil, err
	}
	info.Ready = probe.GetReady() == nil || probe.GetReady().GetValue()
	pc, err := c.identity.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	if err != nil {
		return nil, err
	}
	for _, x := range pc.GetCapabilities() {
		info.PluginService = append(info.PluginService, pluginCapName(x))
	}
	cc, err := c.ctrl.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
	if err != nil {
		return nil, err
	}
	for _, x := range cc.GetCapabilities() {
		info.Controller = append(info.Controller, x.GetRpc().GetType().String())
	}
	nc, err := c.node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		return nil, err
	}
	for _, x := range nc.GetCapabilities() {
		info.NodeFeatures = append(info.NodeFeatures, x.GetRpc().GetType().String())
	}
	ni, err := c.node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil {
		return nil, err
	}
	info.NodeID, info.Topology, info.MaxVolumes = ni.GetNodeId(), ni.GetAccessibleTopology().GetSegments(), ni.GetMaxVolumesPerNode()
	return info, nil
}

// pluginCapName names one plugin capability. The capability is a oneof:
// a service (CONTROLLER_SERVICE, ...) or volume expansion (ONLINE/OFFLINE,
// shown as VOLUME_EXPANSION_ONLINE); reading the wrong arm's getter yields
// its zero value, UNKNOWN.
func pluginCapName(x *csi.PluginCapability) string {
	switch t := x.GetType().(type) {
	case *csi.PluginCapability_Service_:
		return t.Service.GetType().String()
	case *csi.PluginCapability_VolumeExpansion_:
		return "VOLUME_EXPANSION_" + t.VolumeExpansion.GetType().String()
	}
	return "UNKNOWN"
}

func boolWord(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
