package driver

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/volume"
)

// TestPVCEventsRateAndShape: a restore's progress becomes one Normal
// RestoreProgress event on its claim (from the lvol's PVC labels), written
// at most every progressEventEvery and counted up on each write; a volume
// without PVC labels and a driver outside a cluster (nil) record nothing.
// The API write itself runs only in the real-cluster e2e (test/cluster,
// s_long_restore).
func TestPVCEventsRateAndShape(t *testing.T) {
	var mu sync.Mutex
	var got []*corev1.Event
	done := make(chan struct{}, 10)
	e := &pvcEvents{node: "n1", state: map[string]*restoreEvent{}}
	e.send = func(ev *corev1.Event, _ *restoreEvent) error {
		mu.Lock()
		got = append(got, ev)
		mu.Unlock()
		done <- struct{}{}
		return nil
	}
	lv := backend.LVol{ID: "vol-1", Labels: volume.Record{PVCNamespace: "app", PVCName: "data"}.Encode()}
	e.restoreProgress(lv, "restore of x: 1 GiB of 4 GiB (25%)")
	<-done
	e.restoreProgress(lv, "restore of x: 2 GiB of 4 GiB (50%)") // within the interval: dropped
	e.restoreProgress(backend.LVol{ID: "vol-2"}, "no claim known")
	(*pvcEvents)(nil).restoreProgress(lv, "outside a cluster")
	e.mu.Lock()
	e.state["vol-1"].last = time.Now().Add(-progressEventEvery) // the interval passed
	e.mu.Unlock()
	e.restoreProgress(lv, "restore of x: 3 GiB of 4 GiB (75%)")
	<-done
	select {
	case <-done:
		t.Fatal("a third event was written")
	case <-time.After(100 * time.Millisecond):
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("%d events written, want 2", len(got))
	}
	first, second := got[0], got[1]
	if first.Type != corev1.EventTypeNormal || first.Reason != "RestoreProgress" || first.Namespace != "app" ||
		first.InvolvedObject.Kind != "PersistentVolumeClaim" || first.InvolvedObject.Name != "data" || first.Count != 1 ||
		!strings.Contains(first.Message, "25%") || first.Source.Host != "n1" {
		t.Errorf("first event %+v", first)
	}
	if second.Name != first.Name || second.Count != 2 || !strings.Contains(second.Message, "75%") ||
		!second.LastTimestamp.After(first.LastTimestamp.Time) || !second.FirstTimestamp.Equal(&first.FirstTimestamp) {
		t.Errorf("second event %+v, want the same event updated", second)
	}
	e.restoreDone(lv)
	if len(e.state) != 0 {
		t.Error("restoreDone left state behind")
	}
}

// TestRestoreEventNameInjective: restores of one claim name by distinct
// lvols get distinct event names, and every claim name up to the longest
// a claim can have gives a valid one (DNS-1123 subdomain).
func TestRestoreEventNameInjective(t *testing.T) {
	seen := map[string]string{}
	for _, pvc := range []string{"data", "data-0", strings.Repeat("a", 219), strings.Repeat("a", 218) + ".b", strings.Repeat("a-", 126) + "a"} {
		for i := range 2000 {
			id := fmt.Sprintf("v-%032x", i)
			n := restoreEventName(pvc, id)
			if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
				t.Fatalf("restoreEventName(%d-byte claim, %s) = %q: %v", len(pvc), id, n, errs)
			}
			if o, ok := seen[n]; ok && o != pvc+"/"+id {
				t.Fatalf("%s and %s/%s share the event %q", o, pvc, id, n)
			}
			seen[n] = pvc + "/" + id
		}
	}
}
