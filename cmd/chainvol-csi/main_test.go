package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// tag is the link-time version the test builds with, as `make build` sets
// it from git describe.
const tag = "v9.9.9-3-gabcdef1-dirty"

// built is the directory buildBoth built into, once per test binary.
var built struct {
	once sync.Once
	dir  string
	err  error
}

// buildBoth builds chainvol-csi and chainvolctl with the Makefile's
// -ldflags -X, once, and returns their directory (removed by TestMain).
func buildBoth(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "chainvol-csi-test-"); built.err != nil {
			return
		}
		ld := "-X github.com/chainvol/chainvol/pkg/version.tag=" + tag + " -X github.com/chainvol/chainvol/pkg/version.commit=abcdef1234567890"
		cmd := exec.Command("go", "build", "-ldflags", ld, "-o", built.dir+"/", "github.com/chainvol/chainvol/cmd/chainvol-csi",
			"github.com/chainvol/chainvol/cmd/chainvolctl")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// TestVersionsAgree builds both binaries with a link-time tag and checks
// that the four places showing the version agree (issue 17): chainvol-csi
// -version, chainvolctl version -o json, GetPluginInfo's vendor_version
// (and commit in its manifest), and the chainvol_build_info metric.
func TestVersionsAgree(t *testing.T) {
	bin, dir := buildBoth(t), t.TempDir()
	out, err := exec.Command(filepath.Join(bin, "chainvol-csi"), "-version").Output()
	if want := "chainvol-csi " + tag + " (commit abcdef1234567890, "; err != nil || !strings.HasPrefix(string(out), want) {
		t.Errorf("chainvol-csi -version = %q, %v; want prefix %q", out, err, want)
	}
	out, err = exec.Command(filepath.Join(bin, "chainvolctl"), "version", "-o", "json").Output()
	var ctl struct{ Version, Commit string }
	if err != nil || json.Unmarshal(out, &ctl) != nil || ctl.Version != tag || ctl.Commit != "abcdef1234567890" {
		t.Errorf("chainvolctl version -o json = %q, %v", out, err)
	}

	sock := filepath.Join(dir, "csi.sock")
	port := freePort(t)
	for _, d := range []string{"pool", "state"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	drv := exec.Command(filepath.Join(bin, "chainvol-csi"), "-node-id", "n1", "-endpoint", "unix://"+sock,
		"-pool-dir", filepath.Join(dir, "pool"), "-state-dir", filepath.Join(dir, "state"),
		"-metrics-address", fmt.Sprintf("127.0.0.1:%d", port))
	if err := drv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.Process.Kill(); _ = drv.Wait() })
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var info *csi.GetPluginInfoResponse
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		info, err = csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
		cancel()
		if err == nil {
			break
		}
	}
	if err != nil || info.GetVendorVersion() != tag || info.GetManifest()["commit"] != "abcdef1234567890" {
		t.Fatalf("GetPluginInfo = %v, %v; want vendor_version %s", info, err, tag)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	found := ""
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "chainvol_build_info{") {
			found = sc.Text()
		}
	}
	if !strings.Contains(found, `version="`+tag+`"`) || !strings.Contains(found, `commit="abcdef1234567890"`) || !strings.HasSuffix(found, " 1") {
		t.Errorf("chainvol_build_info line %q", found)
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
