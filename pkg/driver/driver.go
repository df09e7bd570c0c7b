package driver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"k8s.io/klog/v2"
	"k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"

	"github.com/chainvol/chainvol/internal/trylock"
	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/fdkeep"
	"github.com/chainvol/chainvol/pkg/jobrec"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
	"github.com/chainvol/chainvol/pkg/volume"
)

// Driver composes chainvol's Identity, Controller, GroupController and
// Node servers (servers.go) over one lvol pool, as aws-ebs-csi-driver's
// Driver{controllerService; nodeService}. Create it with New and serve it
// with Run. Every RPC method of the servers is promoted to it.
type Driver struct {
	*core
	*identity
	*controller
	*snapshotter
	*groups
	*node
}

// core is what the servers share and no server: the node's options, pool,
// mounts, targets, the volume lifecycle manager, metrics, the background
// gc, and the helpers more than one server needs (a volume's lookup and
// health, a snapshot's lookup and deletion, the freeze of a staged
// filesystem). It holds no server, so that no server reaches another's
// methods (siblings_test.go checks it).
type core struct {
	opts    Options
	pool    backend.Pool
	mounter *mount.SafeFormatAndMount
	exec    utilexec.Interface
	loops   *loopDevices
	metrics *metrics
	events  *pvcEvents // progress events on claims; nil outside a cluster
	targets *target.Set
	// locks are the per-call try-locks (locks.go), shared with vols
	// (volume.Config.Locks: TakeSnapshot holds a source's id in them).
	locks *trylock.Set
	// vols owns the lifecycle state beside the lvols' records: jobs and
	// their results, checkpoints, the backup reference index.
	vols *volume.Manager
	// index caches the targets' backups for ListSnapshots (backup_index.go).
	index backupIndex
	// gc collects a chain's unreferenced blocks after backup deletions
	// (gc_background.go).
	gc        *gcScheduler
	gcMetrics *gcMetrics
	// retentionMetrics count what the class retention policies did
	// (retention.go).
	retentionMetrics *retentionMetrics
}

// New builds a driver over an open pool. mounter and exec are injected so
// that node code can be exercised with fault-injecting fakes; pass nil for the
// real ones. It returns an error if opts do not validate.
func New(opts Options, pool backend.Pool, mounter *mount.SafeFormatAndMount, ex utilexec.Interface) (*Driver, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if ex == nil {
		ex = utilexec.New()
	}
	if mounter == nil {
		mounter = &mount.SafeFormatAndMount{Interface: mount.New(""), Exec: ex}
	}
	targets, err := newTargets(opts)
	if err != nil {
		return nil, err
	}
	owner, err := chainOwner(opts.ClusterID)
	if err != nil {
		return nil, err
	}
	c := &core{
		targets: targets,
		opts:    opts,
		pool:    pool,
		mounter: mounter,
		exec:    ex,
		loops:   &loopDevices{exec: ex},
		metrics: newMetrics(),
		events:  newPVCEvents(opts.NodeID),
		locks:   trylock.New(),
	}
	c.vols = volume.NewManager(pool, volume.Config{StateDir: opts.StateDir, Node: opts.NodeID, Owner: owner,
		PoolReserveBytes: opts.PoolReserveBytes, Targets: targets, NoLocalBase: opts.NoLocalBase,
		Observer: observer{metrics: c.metrics, events: c.events, index: &c.index},
		Freezer:  volume.FreezerFunc(c.freezeStaged), Locks: c.locks, Keeper: keeperOf(opts.FDKeeper)})
	c.gc = newGCScheduler(opts.GCDelay, opts.GCMinAge, c.collect)
	c.gcMetrics = newGCMetrics(c.metrics.registry)
	c.retentionMetrics = newRetentionMetrics(c.metrics.registry)
	return &Driver{core: c, identity: &identity{core: c}, controller: &controller{core: c, restore: &restorer{core: c}},
		snapshotter: &snapshotter{core: c}, groups: &groups{core: c}, node: &node{core: c}}, nil
}

// Run serves the CSI services on the unix socket of opts.Endpoint until ctx is
// cancelled, then stops (shutdown): calls drained, jobs stopped, within
// opts.ShutdownTimeout. It removes a stale socket file first. Errors: those
// of the socket, and of serving when that fails before ctx ends.
func (d *Driver) Run(ctx context.Context) error {
	defer d.watchSpace()()
	// Progress records of a driver killed mid-job (chainvolctl jobs shows
	// them as stale until now).
	if n, err := jobrec.Sweep(jobrec.DirOf(d.opts.StateDir)); err != nil || n > 0 {
		klog.InfoS("swept stale job progress records", "removed", n, "err", err)
	}
	// Instant restores answered before a restart hydrate on (the volumes
	// recorded hydrating; no CreateVolume will come for them again).
	// Their FUSE connections, kept across the restart, are served again
	// first: the applications' I/O waits for it.
	d.vols.TakeOverInstants(ctx)
	if err := d.vols.ResumeHydrations(ctx); err != nil {
		klog.ErrorS(err, "resume hydration of instant restores")
	}
	path := socketPath(d.opts.Endpoint)
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	lis, err := listenUnix(path, "socket")
	if err != nil {
		return err
	}
	// WaitForHandlers: Stop waits for the handlers it cancels, so that a
	// call's deferred lease release runs before the process exits.
	srv := grpc.NewServer(grpc.WaitForHandlers(true),
		grpc.ChainUnaryInterceptor(d.logInterceptor, recoverInterceptor, checkIDsInterceptor),
		grpc.ChainStreamInterceptor(d.metrics.grpc.StreamServerInterceptor(), streamInterceptor))
	csi.RegisterIdentityServer(srv, d.identity)
	csi.RegisterControllerServer(srv, d.controllerService())
	csi.RegisterNodeServer(srv, d.node)
	csi.RegisterGroupControllerServer(srv, d.groups) // group_snapshot.go
	csi.RegisterSnapshotMetadataServer(srv, &snapshotMetadata{pool: d.pool, vols: d.vols})
	klog.InfoS("serving CSI", "endpoint", d.opts.Endpoint, "driver", d.opts.DriverName, "node", d.opts.NodeID, "reflink", d.pool.Reflink())
	var serveErr error
	served := make(chan struct{}) // closed when Serve returns
	go func() { serveErr = srv.Serve(lis); close(served) }()
	select {
	case <-served:
		d.shutdown(srv, served) // no call can come; the jobs still must stop
		return serveErr
	case <-ctx.Done():
	}
	d.shutdown(srv, served)
	return nil
}

// watchSpace runs the pool's space watch (volume.Manager.WatchSpace: backup
// bases dropped before the reserve is touched) and returns its stop, which
// waits for it, so that it never outlives the pool.
func (d *Driver) watchSpace() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.vols.WatchSpace(ctx); close(done) }()
	return func() { cancel(); <-done }
}

// topology is this node's accessible topology segment.
func (d *core) topology() *csi.Topology {
	return &csi.Topology{Segments: map[string]string{TopologyKey: d.opts.NodeID}}
}

// newTargets builds the backup targets from the options: the configured
// NAME=URL list, or the embedded default under the state directory, with
// the credentials file read again whenever it changes.
func newTargets(opts Options) (*target.Set, error) {
	def := filepath.Join(opts.StateDir, "backups")
	if len(opts.BackupTargets) == 0 {
		// The embedded default exists from the start; a configured file
		// target must already exist, so an unmounted disk is not filled.
		if err := os.MkdirAll(def, 0o700); err != nil {
			return nil, fmt.Errorf("embedded default backup target: %w", err)
		}
	}
	set, err := target.NewSet(opts.BackupTargets, "file://"+def, target.Secrets{})
	if err == nil && opts.BackupCredentialsFile != "" {
		err = set.UseCredentialsFile(opts.BackupCredentialsFile)
	}
	return set, err
}

// keeperOf is the descriptor keeper at socket path, nil for "".
func keeperOf(path string) volume.Keeper {
	if path == "" {
		return nil
	}
	return fdkeep.Client{Path: path}
}
