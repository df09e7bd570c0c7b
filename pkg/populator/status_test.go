package populator

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestStopped: a permanent failure stops the claim at the source's
// generation; a changed source, a transient reason or a re-created claim
// (another UID of the same name) is tried again.
func TestStopped(t *testing.T) {
	c := userClaim()
	src := &BackupSource{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	cs := claimStatus(src, c)
	meta.SetStatusCondition(&cs.Conditions, metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonBackupNotFound, ObservedGeneration: 3})
	if !stopped(src, c) {
		t.Fatal("permanent failure at this generation not stopped")
	}
	cp := src.DeepCopy()
	if cp.Status.Claims[0].Conditions[0].Reason = "x"; src.Status.Claims[0].Conditions[0].Reason != ReasonBackupNotFound {
		t.Fatal("DeepCopy shares conditions")
	}
	src.Generation = 4
	if stopped(src, c) {
		t.Fatal("a changed source must be tried again")
	}
	src.Generation = 3
	src.Status.Claims[0].Conditions[0].Reason = ReasonUnreachable
	if stopped(src, c) {
		t.Fatal("a transient failure must be retried")
	}
	src.Status.Claims[0].Conditions[0].Reason = ReasonBackupNotFound
	c2 := userClaim()
	c2.UID = types.UID("u-2")
	if stopped(src, c2) {
		t.Fatal("a re-created claim must be tried")
	}
	if cs := claimStatus(src, c2); cs.UID != "u-2" || len(cs.Conditions) != 0 || len(src.Status.Claims) != 1 {
		t.Fatalf("re-created claim's entry %+v of %d", cs, len(src.Status.Claims))
	}
}
