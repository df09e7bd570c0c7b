package e2e

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/driver"
)

// TestInstantFilesystemKeptAcrossDriverKills: an instant restore of an
// ext4 or xfs backup, staged with the mount capability, while an
// application writes files and fsyncs them in the staged filesystem:
// the driver is killed, the driver that takes the FUSE connection over is
// killed right after it answers (its takeover waits for the slow target),
// a third takes it over, the volume hydrates, and the third is killed
// while the volume is still staged (the fourth serves the data file:
// TakeOverFile). No operation of the application fails and every file it
// fsynced reads back; after unstage nothing is left (no mount, loop
// device, keeper entry, record or live marks) and the filesystem checks
// clean.
func TestInstantFilesystemKeptAcrossDriverKills(t *testing.T) {
	for _, fs := range []string{"ext4", "xfs"} {
		t.Run(fs, func(t *testing.T) { instantFilesystemKept(t, fs) })
	}
}

func instantFilesystemKept(t *testing.T, fsType string) {
	sock := filepath.Join(t.TempDir(), "keeper.sock")
	keeper, _ := testutil.StartKeeper(t, sock)
	s3 := startS3(t)
	proxy := startSlowProxy(t, s3.srv.Endpoint)
	poolDir, dir := newPool(t), t.TempDir()
	opts := driver.Options{Endpoint: "unix://" + filepath.Join(dir, "csi.sock"), NodeID: "node-a", PoolDir: poolDir,
		StateDir: filepath.Join(dir, "state"), DriverName: driver.DefaultDriverName, FDKeeper: sock}
	s3.opts(s3.url(proxy.Addr))(&opts)
	noLocalBase(&opts)
	first := startChild(t, opts)

	src := createVolume(t, first.Ctrl, "kfs-src", volSize, mountCap(fsType), nil)
	sp := stagePublish(t, first.Node, src.GetVolumeId(), mountCap(fsType))
	writeTree(t, sp.Path, 11, 24*mib)
	want := hashTree(t, sp.Path)
	id := backup(t, first.Ctrl, src.GetVolumeId(), "kfs-b1", "")
	unpublishUnstage(t, sp)

	resp, err := first.Ctrl.CreateVolume(rpcCtx(t), instantReq("kfs", id, volSize, mountCap(fsType)))
	if err != nil {
		t.Fatalf("instant CreateVolume: %v", err)
	}
	volID := resp.GetVolume().GetVolumeId()
	proxy.setDelay(2 * time.Second) // every GET: the kills land in the hydration and the takeovers wait
	p := stagePublish(t, first.Node, volID, mountCap(fsType))
	app := startFileApp(t, p.Path)

	time.Sleep(time.Second)
	if !hydratingOn(t, first.Node, volID) {
		t.Fatal("hydrated before the first kill")
	}
	first.kill()
	second := startChild(t, opts) // answers Probe while its takeover waits for the target
	second.kill()
	third := startChild(t, opts)
	time.Sleep(time.Second)
	proxy.setDelay(0)
	deadline := time.Now().Add(2 * time.Minute)
	for hydratingOn(t, third.Node, volID) {
		if time.Now().After(deadline) {
			t.Fatal("not hydrated in 2 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	third.kill() // hydrated, still staged: the next driver serves the data file
	fourth := csitest.Start(t, "node-a", poolDir, func(o *driver.Options) {
		o.StateDir, o.BackupTargets, o.BackupCredentialsFile, o.FDKeeper = opts.StateDir, opts.BackupTargets, opts.BackupCredentialsFile, sock
	})
	time.Sleep(time.Second)
	files := app.stop(t)
	t.Logf("the application wrote and fsynced %d files across the kills", len(files))
	for name, h := range files {
		want[name] = h
	}
	sameTree(t, "staged, after the kills", p.Path, want)

	p.node = fourth.Node
	unpublishUnstage(t, p)
	noInstantLeft(t, fourth, volID)
	if keys, err := keeper.Keys(context.Background()); err != nil || len(keys) != 0 {
		t.Errorf("after unstage the keeper holds %v (%v), want nothing", keys, err)
	}
	if left, _ := filepath.Glob(filepath.Join(opts.StateDir, "hydration", volID+"*")); len(left) > 0 {
		t.Errorf("after unstage %v are left", left)
	}
	data, err := fourth.Pool.DataPath(volID)
	if err != nil {
		t.Fatal(err)
	}
	check := exec.Command("e2fsck", "-fn", data)
	if fsType == "xfs" {
		check = exec.Command("xfs_repair", "-n", "-f", data)
	}
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(check.Args, " "), err, out)
	}
	rp := stagePublish(t, fourth.Node, volID, mountCap(fsType))
	sameTree(t, "staged again on the data file", rp.Path, want)
	unpublishUnstage(t, rp)
}

// hydratingOn is hydrating for a node client.
func hydratingOn(t *testing.T, n csi.NodeClient, id string) bool {
	return hydrating(t, &csitest.Node{Node: n}, id)
}

// fileApp writes files of random bytes under dir/app, fsyncing each and
// the directory, and reads back an earlier one after each, until stopped.
type fileApp struct {
	done   chan struct{}
	result chan error
	mu     sync.Mutex
	files  map[string]string // "app/fN" -> sha256, once fsynced
}

func startFileApp(t *testing.T, root string) *fileApp {
	t.Helper()
	dir := filepath.Join(root, "app")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	a := &fileApp{done: make(chan struct{}), result: make(chan error, 1), files: map[string]string{}}
	r := mrand.New(mrand.NewPCG(7, 7))
	go func() {
		var names []string
		for i := 0; ; i++ {
			select {
			case <-a.done:
				a.result <- nil
				return
			default:
			}
			buf := make([]byte, 64<<10+r.IntN(512<<10))
			_, _ = rand.Read(buf)
			name := fmt.Sprintf("f%d", i)
			if err := writeFsynced(filepath.Join(dir, name), buf); err != nil {
				a.result <- err
				return
			}
			sum := sha256.Sum256(buf)
			a.mu.Lock()
			a.files["app/"+name] = hex.EncodeToString(sum[:])
			a.mu.Unlock()
			names = append(names, name)
			old := names[r.IntN(len(names))]
			got, err := os.ReadFile(filepath.Join(dir, old))
			if err != nil {
				a.result <- err
				return
			}
			s := sha256.Sum256(got)
			a.mu.Lock()
			ok := a.files["app/"+old] == hex.EncodeToString(s[:])
			a.mu.Unlock()
			if !ok {
				a.result <- fmt.Errorf("app/%s reads back other bytes than written", old)
				return
			}
		}
	}()
	return a
}

func writeFsynced(path string, buf []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// stop ends the application and fails the test if an operation failed;
// it returns the files it wrote.
func (a *fileApp) stop(t *testing.T) map[string]string {
	t.Helper()
	close(a.done)
	select {
	case err := <-a.result:
		if err != nil {
			t.Fatalf("the application: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the application's I/O still waits a minute after the last driver started")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.files
}
