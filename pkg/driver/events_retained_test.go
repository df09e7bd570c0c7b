package driver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// TestBackupRetainedEvent: a refused delete of a retained backup becomes
// one Warning BackupRetained event, in "default", on the
// VolumeSnapshotContent whose status (or pre-provisioned spec) names the
// snapshot handle, with the refusal as its message; a second refusal
// updates the same event (count 2); a handle no content names records
// nothing. The API is an HTTP server answering as the apiserver does.
func TestBackupRetainedEvent(t *testing.T) {
	var mu sync.Mutex
	stored := map[string]*corev1.Event{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		const events = "/api/v1/namespaces/default/events"
		switch {
		case r.Method == http.MethodGet && r.URL.Path == contentsPath:
			_, _ = io.WriteString(w, `{"items":[
				{"metadata":{"name":"snapcontent-a","uid":"u-a"},"status":{"snapshotHandle":"backup:s3:ns/a@1"}},
				{"metadata":{"name":"pre-b","uid":"u-b"},"spec":{"source":{"snapshotHandle":"backup:s3:ns/b@2"}}}]}`)
		case r.Method == http.MethodGet && len(r.URL.Path) > len(events):
			ev, ok := stored[r.URL.Path[len(events)+1:]]
			if !ok {
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
				return
			}
			_ = json.NewEncoder(w).Encode(ev)
		case (r.Method == http.MethodPost && r.URL.Path == events) || r.Method == http.MethodPut:
			var ev corev1.Event
			if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
				t.Error(err)
			}
			ev.ResourceVersion = "1"
			stored[ev.Name] = &ev
			_ = json.NewEncoder(w).Encode(&ev)
		default:
			t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
			w.WriteHeader(http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	client, err := corev1client.NewForConfig(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	e := &pvcEvents{client: client, node: "n1", state: map[string]*restoreEvent{}}
	ctx := context.Background()
	const msg = "delete backup s3:ns/a@1: backup under Object Lock retention: until 2026-12-03T06:00:00Z"
	for range 2 {
		if err := e.writeRetained(ctx, "backup:s3:ns/a@1", msg, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.writeRetained(ctx, "backup:s3:ns/b@2", "pre-provisioned", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := e.writeRetained(ctx, "backup:s3:ns/none@3", "nobody's", time.Now()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(stored) != 2 {
		t.Fatalf("%d events, want one per content", len(stored))
	}
	for _, ev := range stored {
		o := ev.InvolvedObject
		if o.Kind != "VolumeSnapshotContent" || o.APIVersion != "snapshot.storage.k8s.io/v1" || ev.Namespace != "default" ||
			ev.Reason != "BackupRetained" || ev.Type != corev1.EventTypeWarning {
			t.Errorf("event %+v", ev)
		}
		switch o.Name {
		case "snapcontent-a":
			if o.UID != "u-a" || ev.Message != msg || ev.Count != 2 {
				t.Errorf("content a's event: uid %s, message %q, count %d", o.UID, ev.Message, ev.Count)
			}
		case "pre-b":
			if o.UID != "u-b" || ev.Count != 1 {
				t.Errorf("content b's event: uid %s, count %d", o.UID, ev.Count)
			}
		default:
			t.Errorf("event on %s", o.Name)
		}
	}
}
