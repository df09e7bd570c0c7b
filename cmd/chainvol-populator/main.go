// Command chainvol-populator is chainvol's volume populator: it fills
// claims whose dataSourceRef names a BackupSource (chainvol.csi.io/v1alpha1)
// through the driver's own restore (pkg/populator). It runs as its own
// Deployment with leader election (charts/chainvol templates/populator.yaml).
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/chainvol/chainvol/pkg/populator"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
	"github.com/chainvol/chainvol/pkg/version"
)

func main() {
	klog.InitFlags(nil)
	ns := flag.String("namespace", os.Getenv("POD_NAMESPACE"), "namespace of the prime claims and snapshots (the populator's own; default $POD_NAMESPACE)")
	driver := flag.String("driver", "chainvol.csi.io", "name of the CSI driver that restores")
	def := flag.String("default-target", target.DefaultName, "the driver's default backup target's name, for BackupSources naming none")
	leader := flag.Bool("leader-elect", true, "elect a leader (one replica acts at a time)")
	metrics := flag.String("metrics-address", "0", "address of the controller's metrics endpoint; 0 for none")
	health := flag.String("health-address", ":8081", "address of /healthz and /readyz")
	poll := flag.Duration("poll", 2*time.Second, "how often a claim in progress is looked at again")
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println("chainvol-populator " + version.String())
		return
	}
	if *ns == "" {
		klog.ErrorS(nil, "give -namespace or set POD_NAMESPACE")
		os.Exit(2)
	}
	ctrl.SetLogger(klog.NewKlogr())
	if err := run(*ns, *driver, *def, *leader, *metrics, *health, *poll); err != nil {
		klog.ErrorS(err, "populator stopped")
		os.Exit(1)
	}
}

// run builds the manager and runs the reconciler until SIGTERM.
func run(ns, driver, def string, leader bool, metrics, health string, poll time.Duration) error {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, snapv1.AddToScheme, populator.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: metrics},
		HealthProbeBindAddress:  health,
		LeaderElection:          leader,
		LeaderElectionID:        "chainvol-populator",
		LeaderElectionNamespace: ns,
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	r := &populator.Reconciler{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(),
		Events: mgr.GetEventRecorderFor("chainvol-populator"), //nolint:staticcheck // core events: kubectl describe pvc shows them
		Config: populator.Config{Namespace: ns, Driver: driver, DefaultTarget: def, Poll: poll},
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	klog.InfoS("chainvol-populator starting", "version", version.String(), "namespace", ns, "driver", driver, "defaultTarget", def)
	return mgr.Start(ctrl.SetupSignalHandler())
}
