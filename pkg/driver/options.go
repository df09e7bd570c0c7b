package driver

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
)

// DefaultDriverName is the CSI driver name served when -driver-name is not given.
const DefaultDriverName = "chainvol.csi.io"

// TopologyKey is the topology segment key whose value is the node id
// (CSI spec "Topology"; Kubernetes node affinity on the PV follows it).
const TopologyKey = "topology.chainvol.csi.io/node"

// Options are the driver's settings, filled from command-line flags.
type Options struct {
	// Endpoint is the gRPC listen address, "unix:///path" or "unix:/path".
	Endpoint string
	// NodeID names this node; it is the topology segment's value.
	NodeID string
	// PoolDir is the directory holding the lvol pool.
	PoolDir string
	// StateDir holds node-side state and the embedded default backup target.
	StateDir string
	// DriverName is the CSI plugin name reported by GetPluginInfo.
	DriverName string
	// BackupTargets are NAME=URL pairs; the first is the default target.
	BackupTargets []string
	// BackupCredentialsFile names a key=value file with S3 credentials for
	// targets configured on the driver.
	BackupCredentialsFile string
	// MetricsAddress serves Prometheus /metrics; "" disables it.
	MetricsAddress string
	// MaxVolumesPerNode is reported by NodeGetInfo; 0 means unlimited.
	MaxVolumesPerNode int64
	// KubeletRegistrationPath is the CSI socket as the kubelet sees it on
	// the host; when set, the driver registers itself with the kubelet's
	// plugin watcher (see Registrar) instead of relying on the
	// node-driver-registrar sidecar.
	KubeletRegistrationPath string
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// AddFlags registers the options' flags on fs with their defaults.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Endpoint, "endpoint", "unix:///csi/csi.sock", "CSI gRPC endpoint (unix socket)")
	fs.StringVar(&o.NodeID, "node-id", "", "this node's id, the value of the topology segment (required)")
	fs.StringVar(&o.PoolDir, "pool-dir", "/var/lib/chainvol/pool", "directory of the lvol pool (XFS with reflink or btrfs for O(1) snapshots)")
	fs.StringVar(&o.StateDir, "state-dir", "/var/lib/chainvol", "directory for driver state and the embedded default backup target")
	fs.StringVar(&o.DriverName, "driver-name", DefaultDriverName, "CSI driver name")
	fs.Var((*stringList)(&o.BackupTargets), "backup-target", "backup target as NAME=URL (file:///abs/path or s3://BUCKET/PREFIX?endpoint=HOST:PORT&region=R&insecure=true); repeatable, the first is the default")
	fs.StringVar(&o.BackupCredentialsFile, "backup-credentials-file", "", "key=value file with accessKeyID, secretAccessKey, sessionToken, encryptionKey for driver-configured targets")
	fs.StringVar(&o.MetricsAddress, "metrics-address", ":9090", "address for Prometheus /metrics; empty disables")
	fs.Int64Var(&o.MaxVolumesPerNode, "max-volumes-per-node", 0, "maximum volumes on this node reported to the scheduler; 0 = unlimited")
	fs.StringVar(&o.KubeletRegistrationPath, "kubelet-registration-path", "", "the CSI socket's path on the host; when set, register with the kubelet through "+DefaultRegistrationDir+" (no node-driver-registrar needed)")
}

// Validate checks the options and returns an error naming the first bad one.
func (o *Options) Validate() error {
	if o.NodeID == "" {
		return fmt.Errorf("-node-id is required")
	}
	if len(o.NodeID) > 63 {
		return fmt.Errorf("-node-id %q is longer than 63 bytes (a topology label value)", o.NodeID)
	}
	if !strings.HasPrefix(o.Endpoint, "unix:") {
		return fmt.Errorf("-endpoint %q must be a unix socket (unix:///path)", o.Endpoint)
	}
	for _, d := range []string{o.PoolDir, o.StateDir} {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("directory %q must be absolute", d)
		}
	}
	if o.KubeletRegistrationPath != "" && !filepath.IsAbs(o.KubeletRegistrationPath) {
		return fmt.Errorf("-kubelet-registration-path %q must be absolute", o.KubeletRegistrationPath)
	}
	if o.MaxVolumesPerNode < 0 {
		return fmt.Errorf("-max-volumes-per-node must be >= 0")
	}
	return nil
}

// socketPath returns the filesystem path of a unix endpoint.
func socketPath(endpoint string) string {
	p := strings.TrimPrefix(endpoint, "unix://")
	return strings.TrimPrefix(p, "unix:")
}
