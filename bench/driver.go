package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

const (
	nodeID = "bench-node"
	// nodeB is a second node with its own pool on the same filesystem: it
	// holds no local snapshot of the chain, so its restores are full ones.
	nodeB       = "bench-node-b"
	topologyKey = "topology.chainvol.csi.io/node"
	// s3Target is the name the driver and chainvolctl give the versitygw target.
	s3Target = "s3"
)

// driverProc is bin/chainvol-csi running as a child on a unix socket, with
// the CSI clients the external-provisioner, snapshotter and kubelet would use.
type driverProc struct {
	cmd  *exec.Cmd
	conn *grpc.ClientConn
	ctrl csi.ControllerClient
	node csi.NodeClient
	e    *env
	// nodeID, pool and log are the node's name, pool directory and log file.
	nodeID, pool, log string
	// snapParams are added to every backup CreateSnapshot (VolumeSnapshotClass parameters).
	snapParams map[string]string
	// metrics is the URL of the driver's Prometheus endpoint (loopback).
	metrics string
}

// startDriver runs the driver of node over poolDir (on the bench's XFS)
// with the versitygw bucket as its only (so default) backup target, and
// waits until Probe answers ready. Its socket, state and log are named
// after the node under the scratch directory.
func startDriver(e *env, s *s3, creds, node, poolDir string) (*driverProc, error) {
	if err := os.MkdirAll(poolDir, 0o700); err != nil {
		return nil, err
	}
	sock := filepath.Join(e.tmp, node+".sock")
	metrics, err := freeLoopback()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(e.bin("chainvol-csi"), "-endpoint", "unix://"+sock, "-node-id", node,
		"-pool-dir", poolDir, "-state-dir", filepath.Join(e.tmp, node+"-state"),
		"-backup-target", s3Target+"="+s.chainvolURL(), "-backup-credentials-file", creds, "-metrics-address", metrics)
	logFile, err := os.Create(filepath.Join(e.tmp, node+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d := &driverProc{cmd: cmd, e: e, nodeID: node, pool: poolDir, log: logFile.Name(), metrics: "http://" + metrics + "/metrics"}
	// SIGTERM first: the driver stops its jobs and closes the pool cleanly.
	e.defer_(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logFile.Close()
	})
	d.conn, err = grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	e.defer_(func() { d.conn.Close() })
	d.ctrl, d.node = csi.NewControllerClient(d.conn), csi.NewNodeClient(d.conn)
	id := csi.NewIdentityClient(d.conn)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := id.Probe(ctx, &csi.ProbeRequest{})
		cancel()
		if err == nil && resp.GetReady().GetValue() {
			return d, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("driver not ready after 20s (log %s): %v", logFile.Name(), err)
		}
	}
}

// resetPeak zeroes the driver's VmHWM (writing 5 to clear_refs, Linux 4.0+)
// so that peakRSS afterwards is the peak of the operation in between.
func (d *driverProc) resetPeak() {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", d.cmd.Process.Pid), []byte("5"), 0)
}

// peakRSS is the driver's VmHWM in bytes.
func (d *driverProc) peakRSS() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cpuTime is the driver's user+system CPU time so far (/proc/PID/stat
// utime and stime, in clock ticks of 1/100 s on Linux).
func (d *driverProc) cpuTime() time.Duration { return procCPU(d.cmd.Process.Pid) }

// machineBusy is the CPU time all cores spent outside idle and iowait
// since boot (the first line of /proc/stat, in USER_HZ ticks of 1/100 s).
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq (steal, guest: not ours)
	var busy int64
	for i, v := range f[1:] {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && i != 3 && i != 4 && i < 7 {
			busy += n
		}
	}
	return time.Duration(busy) * 10 * time.Millisecond
}

// procCPU is process pid's user+system CPU time so far, 0 if it cannot be
// read.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the ")" that ends the command name: state is the 3rd
	// field of stat, utime the 14th and stime the 15th.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

var uploadedRE = regexp.MustCompile(`"backup uploaded" backup="([^"]+)".* duration="?([0-9.]+[a-zµ]+)`)

// uploadDuration finds the engine's own duration of the upload of ref in
// the driver's log: the backup time minus the snapshot and the polling.
func (d *driverProc) uploadDuration(ref string) (time.Duration, bool) {
	b, err := os.ReadFile(d.log)
	if err != nil {
		return 0, false
	}
	for _, m := range uploadedRE.FindAllStringSubmatch(string(b), -1) {
		if m[1] == ref {
			t, err := time.ParseDuration(m[2])
			return t, err == nil
		}
	}
	return 0, false
}

func mountCap() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "ext4"}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}
}

func blockCap() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}
}

// longCall is the deadline of calls that wait for a restore or an upload:
// the driver answers as soon as the work is done, well before it.
const longCall = 30 * time.Minute

// whileAborted calls rpc, each time with a longCall deadline, until it
// answers something else than Aborted (the driver's answer while a restore
// or an upload runs on past a deadline, or another call holds the name),
// pausing between calls as the external-provisioner and snapshotter retry.
func whileAborted[R any](pause time.Duration, rpc func(ctx context.Context) (R, error)) (R, error) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), longCall)
		resp, err := rpc(ctx)
		cancel()
		if status.Code(err) != codes.Aborted {
			return resp, err
		}
		time.Sleep(pause)
	}
}

// createVolume is CreateVolume as the external-provisioner sends it in
// node-deployment mode (this node's topology required); src may be nil.
func (d *driverProc) createVolume(name string, size int64, vc *csi.VolumeCapability, params map[string]string, src *csi.VolumeContentSource) (string, error) {
	topo := &csi.Topology{Segments: map[string]string{topologyKey: d.nodeID}}
	req := &csi.CreateVolumeRequest{Name: name, CapacityRange: &csi.CapacityRange{RequiredBytes: size},
		VolumeCapabilities: []*csi.VolumeCapability{vc}, Parameters: params, VolumeContentSource: src,
		AccessibilityRequirements: &csi.TopologyRequirement{Requisite: []*csi.Topology{topo}, Preferred: []*csi.Topology{topo}}}
	resp, err := whileAborted(100*time.Millisecond, func(ctx context.Context) (*csi.CreateVolumeResponse, error) {
		return d.ctrl.CreateVolume(ctx, req)
	})
	if err != nil {
		return "", fmt.Errorf("CreateVolume %s: %w", name, err)
	}
	return resp.GetVolume().GetVolumeId(), nil
}

func (d *driverProc) deleteVolume(id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := d.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
	return err
}

// snapshot takes a CSI snapshot (archived to the target when backup is set)
// and retries CreateSnapshot, as the external-snapshotter does, until it is
// ready_to_use; the time returned runs from the first call to ready.
func (d *driverProc) snapshot(name, volID string, backup bool) (string, time.Duration, error) {
	params := map[string]string{"backup": strconv.FormatBool(backup)}
	if backup {
		maps.Copy(params, d.snapParams)
	}
	req := &csi.CreateSnapshotRequest{Name: name, SourceVolumeId: volID, Parameters: params}
	start := time.Now()
	for {
		resp, err := whileAborted(50*time.Millisecond, func(ctx context.Context) (*csi.CreateSnapshotResponse, error) {
			return d.ctrl.CreateSnapshot(ctx, req)
		})
		if err != nil {
			return "", 0, fmt.Errorf("CreateSnapshot %s: %w", name, err)
		}
		if resp.GetSnapshot().GetReadyToUse() {
			return resp.GetSnapshot().GetSnapshotId(), time.Since(start), nil
		}
	}
}

func (d *driverProc) deleteSnapshot(id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := d.ctrl.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: id})
	return err
}

// stagePublish stages and publishes a mount volume the way the kubelet does
// and returns the published path; the undo stack unpublishes and unstages.
func (d *driverProc) stagePublish(id, name string) (string, error) {
	target, _, _, err := d.stagePublishTimed(id, name)
	return target, err
}

// stagePaths are the staging and publish paths of a volume named name.
func (d *driverProc) stagePaths(name string) (staging, target string) {
	return filepath.Join(d.e.tmp, "mnt", name+"-stage"), filepath.Join(d.e.tmp, "mnt", name+"-pub")
}

// stagePublishTimed is stagePublish that also returns how long
// NodeStageVolume and NodePublishVolume each took.
func (d *driverProc) stagePublishTimed(id, name string) (target string, stage, publish time.Duration, err error) {
	staging, target := d.stagePaths(name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	if _, err := d.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging, VolumeCapability: mountCap()}); err != nil {
		return "", 0, 0, fmt.Errorf("NodeStageVolume: %w", err)
	}
	stage = time.Since(start)
	d.e.defer_(func() {
		_, _ = d.node.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging})
	})
	start = time.Now()
	if _, err := d.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: staging,
		TargetPath: target, VolumeCapability: mountCap()}); err != nil {
		return "", 0, 0, fmt.Errorf("NodePublishVolume: %w", err)
	}
	publish = time.Since(start)
	d.e.defer_(func() {
		_, _ = d.node.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
	})
	return target, stage, publish, nil
}

// unstageDelete unpublishes, unstages and deletes a volume that
// stagePublish published as name, now rather than at teardown (the undo
// stack's calls then find nothing left, which CSI answers as success).
func (d *driverProc) unstageDelete(id, name string) error {
	staging, target := d.stagePaths(name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := d.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); err != nil {
		return fmt.Errorf("NodeUnpublishVolume: %w", err)
	}
	if _, err := d.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging}); err != nil {
		return fmt.Errorf("NodeUnstageVolume: %w", err)
	}
	return d.deleteVolume(id)
}

// newLvolFile runs fn and returns the one data file it added to the pool's
// lvols/ directory: how the bench finds the image behind a CSI id (a backup
// snapshot's id names the backup, not the lvol).
func (d *driverProc) newLvolFile(fn func() error) (string, error) {
	dir := filepath.Join(d.pool, "lvols")
	before := map[string]bool{}
	ents, _ := os.ReadDir(dir)
	for _, en := range ents {
		before[en.Name()] = true
	}
	if err := fn(); err != nil {
		return "", err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var added []string
	for _, en := range ents {
		if !before[en.Name()] && strings.HasSuffix(en.Name(), ".img") {
			added = append(added, filepath.Join(dir, en.Name()))
		}
	}
	if len(added) != 1 {
		return "", fmt.Errorf("expected one new lvol file in %s, found %v", dir, added)
	}
	return added[0], nil
}
