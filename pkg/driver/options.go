package driver

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/chainvol/chainvol/pkg/topology"
)

// DefaultDriverName is the CSI driver name served when -driver-name is not given.
const DefaultDriverName = "chainvol.csi.io"

// TopologyKey is topology.Key, the node topology segment key (CSI spec
// "Topology"); the CLI imports it from pkg/topology, not from here.
const TopologyKey = topology.Key

// Options are the driver's settings, filled from command-line flags.
type Options struct {
	// Endpoint is the gRPC listen address, "unix:///path" or "unix:/path".
	Endpoint string
	// NodeID names this node; it is the topology segment's value.
	NodeID string
	// ClusterID names the cluster this driver backs up from; its chains are
	// recorded as owned by "cluster/ID" (FORMAT.md §3.3), so another
	// cluster's driver on the same bucket is refused instead of mixing its
	// claims' data into these chains. "" means the kube-system namespace's
	// UID when the driver runs in a cluster, else no owner is recorded.
	ClusterID string
	// PoolDir is the directory holding the lvol pool.
	PoolDir string
	// StateDir holds node-side state and the embedded default backup target.
	StateDir string
	// FDKeeper is the descriptor keeper's socket (pkg/fdkeep); "" for none.
	FDKeeper string
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
	// PoolReserveBytes is free space in bytes that restores leave in the
	// pool (admission and the guard of running restores, capacity.go);
	// 0 means min(5% of the pool's filesystem, 1 GiB).
	PoolReserveBytes int64
	// GCDelay is how long after the last backup deletion of a chain the
	// driver collects the chain's unreferenced blocks (gc_background.go);
	// 0 disables it. GCMinAge is that gc's grace for young blocks.
	GCDelay, GCMinAge time.Duration
	// NoLocalBase makes every restore fetch every block from the target,
	// never starting from a local snapshot of the chain (volume/restore_seed.go):
	// to check a target end to end, and for tests of target faults.
	NoLocalBase bool
	// ShutdownTimeout bounds the stop on SIGTERM or SIGINT (shutdown.go):
	// draining calls, stopping jobs and releasing their chain leases; 0
	// means DefaultShutdownTimeout. Keep it below the pod's
	// terminationGracePeriodSeconds.
	ShutdownTimeout time.Duration
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// AddFlags registers the options' flags on fs with their defaults.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Endpoint, "endpoint", "unix:///csi/csi.sock", "CSI gRPC endpoint (unix socket)")
	fs.StringVar(&o.NodeID, "node-id", "", "this node's id, the value of the topology segment (required)")
	fs.StringVar(&o.ClusterID, "cluster-id", "", "this cluster's id, recorded as the owner of the chains its backups write (default: the kube-system namespace's UID when in a cluster)")
	fs.StringVar(&o.PoolDir, "pool-dir", "/var/lib/chainvol/pool", "directory of the lvol pool (XFS with reflink or btrfs for O(1) snapshots)")
	fs.StringVar(&o.StateDir, "state-dir", "/var/lib/chainvol", "directory for driver state and the embedded default backup target")
	fs.StringVar(&o.DriverName, "driver-name", DefaultDriverName, "CSI driver name")
	fs.Var((*stringList)(&o.BackupTargets), "backup-target", "backup target as NAME=URL (file:///abs/path or s3://BUCKET/PREFIX?endpoint=HOST:PORT&region=R&insecure=true, optional ca=/abs/ca.pem, style=path|virtual|auto, imds=true); repeatable, the first is the default")
	fs.StringVar(&o.BackupCredentialsFile, "backup-credentials-file", "", "key=value file with accessKeyID, secretAccessKey, sessionToken, encryptionKey for driver-configured targets")
	fs.StringVar(&o.MetricsAddress, "metrics-address", ":9090", "address for Prometheus /metrics; empty disables")
	fs.Int64Var(&o.MaxVolumesPerNode, "max-volumes-per-node", 0, "maximum volumes on this node reported to the scheduler; 0 = unlimited")
	fs.Int64Var(&o.PoolReserveBytes, "pool-reserve-bytes", 0, "free bytes that restores leave in the pool: a restore that would go below is refused (ResourceExhausted) or stopped; 0 = min(5% of the pool, 1 GiB)")
	fs.DurationVar(&o.GCDelay, "gc-delay", DefaultGCDelay, "after deleting a backup, collect its chain's unreferenced blocks this much later (deletions within the delay coalesce); 0 disables")
	fs.DurationVar(&o.GCMinAge, "gc-min-age", DefaultGCMinAge, "the background gc keeps unreferenced blocks younger than this (a margin for format-version-1 writers; running backups are protected by chain locks)")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", DefaultShutdownTimeout, "on SIGTERM or SIGINT, how long the driver may take to drain calls and stop its restores, uploads and gcs (releasing their chain locks) before it exits; keep it below the pod's terminationGracePeriodSeconds")
	fs.StringVar(&o.FDKeeper, "fd-keeper", "", "unix socket of the descriptor keeper (chainvol-csi keeper) that holds the FUSE connections of instant volumes across a restart of this driver; empty: none, a restart fails their I/O until they are staged again")
	fs.BoolVar(&o.NoLocalBase, "no-local-base", false, "restores fetch every block from the backup target, never starting from a local snapshot of the chain")
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
	if o.PoolReserveBytes < 0 {
		return fmt.Errorf("-pool-reserve-bytes must be >= 0")
	}
	if o.ShutdownTimeout < 0 {
		return fmt.Errorf("-shutdown-timeout must be >= 0")
	}
	if o.GCDelay < 0 || o.GCMinAge < 0 {
		return fmt.Errorf("-gc-delay and -gc-min-age must be >= 0")
	}
	if o.MaxVolumesPerNode < 0 {
		return fmt.Errorf("-max-volumes-per-node must be >= 0")
	}
	return nil
}
