package populator

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Names of the objects the populator makes for one user claim, derived
// from the claim's UID so that a restarted populator finds them again and
// never makes a second volume for one claim (lib-volume-populator names
// its prime claim "prime-UID" the same way).
const (
	// Finalizer on the user's claim while the populator owns objects for
	// it (lib-volume-populator: populate-target-protection).
	Finalizer = Group + "/populate-target-protection"
	// AnnPopulatedFrom on the prime claim and the rebound PV: the user's
	// claim "NAMESPACE/NAME" (lib-volume-populator's populated-from).
	AnnPopulatedFrom = Group + "/populated-from"
	// LabelFor on every object made for a claim: the claim's UID; teardown
	// and tests look for it.
	LabelFor = Group + "/populator-for"
	// AnnSelectedNode is the node the scheduler picked (WaitForFirstConsumer).
	AnnSelectedNode = "volume.kubernetes.io/selected-node"
	// labelManagedBy routes a content to one node's csi-snapshotter
	// (--node-deployment), as chainvolctl k8s import does.
	labelManagedBy = "snapshot.storage.kubernetes.io/managed-by"
)

// primeName is the prime claim's and prime snapshot's name in the
// populator's namespace.
func primeName(uid types.UID) string { return "prime-" + string(uid) }

// contentName is the cluster-scoped VolumeSnapshotContent's name.
func contentName(uid types.UID) string { return "chainvol-prime-" + string(uid) }

// forClaim is the populated-from value of a claim.
func forClaim(c *corev1.PersistentVolumeClaim) string { return c.Namespace + "/" + c.Name }
