//go:build apiserver

// Opt-in (go test -tags apiserver ./pkg/populator/): needs etcd on PATH and
// the kube-apiserver that make e2e-cluster builds into its cache, which a
// fresh machine running make test has not; docs/TESTING.md.

package populator

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"
)

// TestAgainstAPIServer runs the reconciler against a real kube-apiserver
// (POPULATOR_TEST_APISERVER=https://HOST:PORT with POPULATOR_TEST_TOKEN,
// an admin token, and POPULATOR_TEST_SA_TOKEN, the populator's service
// account's; or one started here from KUBE_APISERVER, default the
// cluster e2e's $CHAINVOL_CLUSTER_CACHE/bin/kube-apiserver, and etcd on
// PATH, as the service account with deploy/base's RBAC) and plays the external-provisioner and PV controller by
// hand: WaitForFirstConsumer, prime objects, rebind, cleanup, status; a
// permanent failure relayed from the prime claim; a claim deleted
// mid-restore. The real-cluster e2e (test/cluster) runs the real parts.
func TestAgainstAPIServer(t *testing.T) {
	host := os.Getenv("POPULATOR_TEST_APISERVER")
	if host == "" {
		host = startAPIServer(t)
	}
	cfg := &rest.Config{Host: host, BearerToken: os.Getenv("POPULATOR_TEST_TOKEN"), TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, snapv1.AddToScheme, AddToScheme, apiextv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	crds := []string{"../../deploy/base/crd-backupsource.yaml"}
	modCache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	snapDir := filepath.Join(strings.TrimSpace(string(modCache)), "github.com/kubernetes-csi/external-snapshotter/client/v8@v8.7.0/config/crd")
	crds = append(crds, filepath.Join(snapDir, "snapshot.storage.k8s.io_volumesnapshots.yaml"), filepath.Join(snapDir, "snapshot.storage.k8s.io_volumesnapshotcontents.yaml"))
	for _, f := range crds {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatal(err)
		}
		if err := cl.Create(ctx, &crd); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("%s: %v", f, err)
		}
	}
	time.Sleep(3 * time.Second) // CRDs established
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "chainvol-system"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "chainvol"}, Provisioner: "chainvol.csi.io", VolumeBindingMode: &wffc},
		&BackupSource{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"}, Spec: BackupSourceSpec{Chain: "${pvc.namespace}/${pvc.name}", Backup: "before:2026-11-29T10:15:00Z"}},
		&BackupSource{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "shop"}, Spec: BackupSourceSpec{Chain: "x", Backup: "before:2026-99-29T10:15:00Z"}},
	} {
		if err := cl.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %s: %v", o.GetName(), err)
		}
	}
	mcfg := cfg
	if tok := os.Getenv("POPULATOR_TEST_SA_TOKEN"); tok != "" {
		// The reconciler as system:serviceaccount:chainvol-system:chainvol-populator
		// with deploy/base's RBAC and nothing else: the RBAC is minimal but enough.
		applyRBAC(ctx, t, cl)
		mcfg = rest.CopyConfig(cfg)
		mcfg.BearerToken = tok
	}
	mgr, err := ctrl.NewManager(mcfg, ctrl.Options{Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Events: mgr.GetEventRecorderFor("chainvol-populator"), //nolint:staticcheck
		Config: Config{Namespace: "chainvol-system", Driver: "chainvol.csi.io", DefaultTarget: "default", Poll: 200 * time.Millisecond}}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	claim := func(name, src string) *corev1.PersistentVolumeClaim {
		c := userClaim()
		c.Name, c.Namespace, c.UID, c.Annotations = name, "shop", "", nil
		c.Spec.DataSourceRef.Name = src
		if err := cl.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// No controller-manager runs here: the pvc-protection controller's
	// part (a deleted claim no pod uses loses its finalizer) is played by
	// hand at every look, unless hold is set.
	hold := false
	unprotect := func() {
		var pvcs corev1.PersistentVolumeClaimList
		_ = cl.List(ctx, &pvcs)
		for i := range pvcs.Items {
			p := &pvcs.Items[i]
			if p.DeletionTimestamp != nil && controllerutil.RemoveFinalizer(p, "kubernetes.io/pvc-protection") {
				_ = cl.Update(ctx, p)
			}
		}
	}
	eventually := func(what string, f func() bool) {
		t.Helper()
		for end := time.Now().Add(20 * time.Second); !f(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("timed out: %s", what)
			}
			if !hold {
				unprotect()
			}
		}
	}
	hasEvent := func(c *corev1.PersistentVolumeClaim, reason string) bool {
		var evs corev1.EventList
		_ = cl.List(ctx, &evs, client.InNamespace(c.Namespace))
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == c.Name && e.Reason == reason {
				return true
			}
		}
		return false
	}
	gone := func(o client.Object) bool {
		err := cl.Get(ctx, client.ObjectKeyFromObject(o), o)
		return apierrors.IsNotFound(err) || err == nil && o.GetDeletionTimestamp() != nil
	}
	selectNode := func(c *corev1.PersistentVolumeClaim) {
		patch := client.MergeFrom(c.DeepCopy())
		c.Annotations = map[string]string{AnnSelectedNode: "node-a"}
		if err := cl.Patch(ctx, c, patch); err != nil {
			t.Fatal(err)
		}
	}
	prime := func(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
		p := &corev1.PersistentVolumeClaim{}
		eventually("prime claim of "+c.Name, func() bool {
			return cl.Get(ctx, types.NamespacedName{Namespace: "chainvol-system", Name: primeName(c.UID)}, p) == nil
		})
		return p
	}

	// 1. The happy path, WaitForFirstConsumer first.
	c := claim("data-db-10", "db")
	eventually("WaitingForFirstConsumer", func() bool { return hasEvent(c, ReasonWaitingForConsumer) })
	selectNode(c)
	p := prime(c)
	var vsc snapv1.VolumeSnapshotContent
	if err := cl.Get(ctx, types.NamespacedName{Name: contentName(c.UID)}, &vsc); err != nil || *vsc.Spec.Source.SnapshotHandle != "backup:default:shop/data-db-10@before:2026-11-29T10:15:00Z" {
		t.Fatalf("content %v: %+v", err, vsc.Spec)
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("3Gi")},
			AccessModes: p.Spec.AccessModes, PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete, StorageClassName: "chainvol",
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "chainvol.csi.io", VolumeHandle: "vol-1",
				VolumeAttributes: map[string]string{"restoredFrom": "default:shop/data-db-10@20261129T100000Z"}}},
		},
	}
	if err := cl.Create(ctx, pv); err != nil {
		t.Fatal(err)
	}
	p.Spec.VolumeName = "pv-1"
	if err := cl.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	eventually("PV rebound to the user's claim", func() bool {
		_ = cl.Get(ctx, types.NamespacedName{Name: "pv-1"}, pv)
		return pv.Spec.ClaimRef.Namespace == "shop" && pv.Spec.ClaimRef.UID == c.UID && pv.Annotations[AnnPopulatedFrom] == "shop/data-db-10"
	})
	_ = cl.Get(ctx, client.ObjectKeyFromObject(c), c)
	c.Spec.VolumeName = "pv-1"
	if err := cl.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Status.Phase = corev1.ClaimBound
	if err := cl.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	eventually("prime objects removed, finalizer dropped", func() bool {
		_ = cl.Get(ctx, client.ObjectKeyFromObject(c), c)
		return gone(p.DeepCopy()) && gone(&snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: contentName(c.UID)}}) &&
			gone(&snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: primeName(c.UID), Namespace: "chainvol-system"}}) && !controllerutil.ContainsFinalizer(c, Finalizer)
	})
	var src BackupSource
	eventually("status Ready with the resolved id", func() bool {
		_ = cl.Get(ctx, types.NamespacedName{Namespace: "shop", Name: "db"}, &src)
		return len(src.Status.Claims) == 1 && src.Status.Claims[0].Resolved == "default:shop/data-db-10@20261129T100000Z" && src.Status.Claims[0].Conditions[0].Status == metav1.ConditionTrue
	})
	eventually("Populated event", func() bool { return hasEvent(c, ReasonPopulated) })

	// 2. A permanent failure relayed from the prime claim.
	g := claim("data-db-2", "db")
	selectNode(g)
	gp := prime(g)
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "prov-1", Namespace: "chainvol-system"}, Reason: "ProvisioningFailed", Type: "Warning",
		InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "chainvol-system", Name: gp.Name, UID: gp.UID},
		Message:        `failed to provision volume with StorageClass "chainvol": rpc error: code = NotFound desc = chain "shop/data-db-2" has no backup created at or before 2026-11-29T10:15:00Z`,
		LastTimestamp:  metav1.Now(), Source: corev1.EventSource{Component: "test"}}
	if err := cl.Create(ctx, ev); err != nil {
		t.Fatal(err)
	}
	eventually("BackupNotFound on the claim, prime objects gone", func() bool {
		_ = cl.Get(ctx, client.ObjectKeyFromObject(g), g)
		return hasEvent(g, ReasonBackupNotFound) && gone(gp.DeepCopy()) && !controllerutil.ContainsFinalizer(g, Finalizer)
	})
	time.Sleep(time.Second) // a permanent failure is not retried: no new prime claim
	if err := cl.Get(ctx, client.ObjectKeyFromObject(gp), gp); err == nil && gp.DeletionTimestamp == nil {
		t.Fatalf("prime claim of %s made again after a permanent failure", g.Name)
	}
	if cl.Get(ctx, client.ObjectKeyFromObject(g), g); controllerutil.ContainsFinalizer(g, Finalizer) {
		t.Fatalf("%s taken again after a permanent failure", g.Name)
	}

	// 3. An Immediate class: the volume is made on a node running the driver
	// (the node-deployment provisioners act only on claims with a node).
	now := storagev1.VolumeBindingImmediate
	for _, o := range []client.Object{
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "chainvol-now"}, Provisioner: "chainvol.csi.io", VolumeBindingMode: &now},
		&storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "chainvol.csi.io", NodeID: "node-b"}}}},
	} {
		if err := cl.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	im := userClaim()
	im.Name, im.Namespace, im.UID, im.Annotations = "data-db-5", "shop", "", nil
	*im.Spec.StorageClassName = "chainvol-now"
	im.Spec.DataSourceRef.Name = "db"
	if err := cl.Create(ctx, im); err != nil {
		t.Fatal(err)
	}
	if ip := prime(im); ip.Annotations[AnnSelectedNode] != "node-b" {
		t.Fatalf("prime of an Immediate claim on node %q", ip.Annotations[AnnSelectedNode])
	}

	// 4. An invalid reference and a claim deleted mid-restore.
	b := claim("data-db-3", "bad")
	selectNode(b)
	eventually("InvalidReference", func() bool { return hasEvent(b, ReasonInvalidReference) })
	// The prime snapshot goes only once the prime claim is gone, and its
	// content only once it is: the snapshot-controller keeps a snapshot a
	// Pending claim is provisioned from, and one whose content went first
	// stays for good (the cluster e2e's claim deleted mid-restore).
	d := claim("data-db-4", "db")
	selectNode(d)
	dp := prime(d)
	dsnap := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: primeName(d.UID), Namespace: "chainvol-system"}}
	dvsc := &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: contentName(d.UID)}}
	_ = cl.Get(ctx, client.ObjectKeyFromObject(d), d)
	hold = true
	if err := cl.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	eventually("prime claim of the deleted claim being deleted", func() bool {
		err := cl.Get(ctx, client.ObjectKeyFromObject(dp), dp)
		return err == nil && dp.DeletionTimestamp != nil
	})
	time.Sleep(time.Second) // several looks while the prime claim lingers
	if gone(dsnap.DeepCopy()) || gone(dvsc.DeepCopy()) {
		t.Fatal("prime snapshot or content deleted while the prime claim still exists")
	}
	hold = false
	eventually("deleted claim released, its prime objects gone", func() bool {
		err := cl.Get(ctx, client.ObjectKeyFromObject(d), d)
		absent := func(o client.Object) bool { return apierrors.IsNotFound(cl.Get(ctx, client.ObjectKeyFromObject(o), o)) }
		return apierrors.IsNotFound(err) && absent(dp.DeepCopy()) && absent(dsnap.DeepCopy()) && absent(dvsc.DeepCopy())
	})
}

// applyRBAC creates the RBAC objects of deploy/base/populator.yaml.
func applyRBAC(ctx context.Context, t *testing.T, cl client.Client) {
	data, err := os.ReadFile("../../deploy/base/populator.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatal(err)
		}
		var o client.Object
		switch tm.Kind {
		case "ClusterRole":
			o = &rbacv1.ClusterRole{}
		case "ClusterRoleBinding":
			o = &rbacv1.ClusterRoleBinding{}
		case "Role":
			o = &rbacv1.Role{}
		case "RoleBinding":
			o = &rbacv1.RoleBinding{}
		default:
			continue
		}
		if err := yaml.UnmarshalStrict([]byte(doc), o); err != nil {
			t.Fatal(err)
		}
		if err := cl.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// startAPIServer starts etcd and kube-apiserver in a temporary directory
// with a token file (admin "admin-token", the populator's service account
// "sa-token"), sets POPULATOR_TEST_TOKEN and POPULATOR_TEST_SA_TOKEN and
// returns the address; it skips the test when either binary is missing.
func startAPIServer(t *testing.T) string {
	apiserver := os.Getenv("KUBE_APISERVER")
	if apiserver == "" {
		apiserver = "/var/cache/chainvol-cluster/bin/kube-apiserver"
	}
	etcd, err := exec.LookPath("etcd")
	if _, serr := os.Stat(apiserver); err != nil || serr != nil {
		t.Skipf("needs etcd on PATH and kube-apiserver at %s (make e2e-cluster builds it)", apiserver)
	}
	dir := t.TempDir()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	files := map[string][]byte{
		"sa.key":     pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		"sa.pub":     pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
		"tokens.csv": []byte("admin-token,admin,admin,system:masters\nsa-token,system:serviceaccount:chainvol-system:chainvol-populator,sa,system:serviceaccounts\n"),
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	port := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	ec, ep, ap := port(), port(), port()
	start := func(name string, args ...string) {
		cmd := exec.Command(name, args...)
		log, _ := os.Create(filepath.Join(dir, filepath.Base(name)+".log"))
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	start(etcd, "--data-dir", filepath.Join(dir, "etcd"), fmt.Sprintf("--listen-client-urls=http://127.0.0.1:%d", ec),
		fmt.Sprintf("--advertise-client-urls=http://127.0.0.1:%d", ec), fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", ep))
	start(apiserver, fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", ec), fmt.Sprintf("--secure-port=%d", ap), "--bind-address=127.0.0.1",
		"--cert-dir="+filepath.Join(dir, "certs"), "--service-account-key-file="+filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(dir, "sa.key"), "--service-account-issuer=https://populator.test",
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"), "--authorization-mode=RBAC", "--service-cluster-ip-range=10.0.0.0/24",
		"--disable-admission-plugins=ServiceAccount")
	t.Setenv("POPULATOR_TEST_TOKEN", "admin-token")
	t.Setenv("POPULATOR_TEST_SA_TOKEN", "sa-token")
	host := fmt.Sprintf("https://127.0.0.1:%d", ap)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for end := time.Now().Add(90 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		req, _ := http.NewRequest("GET", host+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer admin-token")
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return host
			}
		}
		if time.Now().After(end) {
			t.Fatalf("kube-apiserver not ready; logs in %s", dir)
		}
	}
}
