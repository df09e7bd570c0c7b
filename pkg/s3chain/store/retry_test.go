package store_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

var fastRetry = store.RetryPolicy{Attempts: 4, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}

func TestRetryStore(t *testing.T) {
	ctx := context.Background()
	mem := storetest.NewMem()
	_ = mem.Put(ctx, "k", []byte("data"))
	slow := fmt.Errorf("503 SlowDown: %w", store.ErrTransient)

	f := storetest.NewFaulty(mem).Add(storetest.Fault{Op: storetest.OpGet, Key: eq("k"), Times: 2, Err: slow})
	got, err := store.NewRetryStore(f, fastRetry).Get(ctx, "k")
	if err != nil || string(got) != "data" || f.Gets("k") != 3 {
		t.Fatalf("Get after two 503s = %q, %v, %d tries; want data, nil, 3 tries", got, err, f.Gets("k"))
	}

	for _, tc := range []struct {
		name      string
		fault     error
		want      error
		wantTries int
	}{
		{"not found", nil, store.ErrObjectNotFound, 1},
		{"access denied", store.ErrAccessDenied, store.ErrAccessDenied, 1},
		{"bad target", store.ErrBadTarget, store.ErrBadTarget, 1},
		{"always throttled", slow, store.ErrTransient, fastRetry.Attempts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := storetest.NewFaulty(mem)
			key := "missing"
			if tc.fault != nil {
				key = "k"
				f.FailKeys(storetest.OpGet, eq(key), tc.fault)
			}
			_, err := store.NewRetryStore(f, fastRetry).Get(ctx, key)
			if !errors.Is(err, tc.want) || f.Gets(key) != tc.wantTries {
				t.Fatalf("Get = %v after %d tries; want %v after %d", err, f.Gets(key), tc.want, tc.wantTries)
			}
		})
	}
}

// A cancelled ctx ends the wait between tries at once.
func TestRetryStoreHonoursContext(t *testing.T) {
	f := storetest.NewFaulty(storetest.NewMem()).FailKeys(storetest.OpPut, nil, store.ErrTransient)
	s := store.NewRetryStore(f, store.RetryPolicy{Attempts: 5, BaseDelay: time.Minute, MaxDelay: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.Put(ctx, "k", []byte("x"))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second || f.Calls(storetest.OpPut) > 2 {
		t.Fatalf("Put = %v after %v and %d tries; want DeadlineExceeded promptly", err, time.Since(start), f.Calls(storetest.OpPut))
	}
}

// flakyList fails its first List with ErrTransient after delivering two
// objects, as a connection reset between ListObjectsV2 pages would.
type flakyList struct {
	store.Store
	mu    sync.Mutex
	calls int
}

func (f *flakyList) List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	f.mu.Lock()
	f.calls++
	first := f.calls == 1
	f.mu.Unlock()
	n := 0
	return f.Store.List(ctx, prefix, func(info store.ObjectInfo) error {
		if n++; first && n == 3 {
			return fmt.Errorf("connection reset: %w", store.ErrTransient)
		}
		return fn(info)
	})
}

func TestRetryStoreListResumes(t *testing.T) {
	ctx := context.Background()
	mem := storetest.NewMem()
	want := []string{"a", "b", "c", "d", "e"}
	for _, k := range want {
		_ = mem.Put(ctx, k, []byte(k))
	}
	fl := &flakyList{Store: mem}
	var seen []string
	err := store.NewRetryStore(fl, fastRetry).List(ctx, "", func(i store.ObjectInfo) error {
		seen = append(seen, i.Key)
		return nil
	})
	if err != nil || !slices.Equal(seen, want) || fl.calls != 2 {
		t.Fatalf("List = %v, saw %q in %d calls; want nil, %q in 2", err, seen, fl.calls, want)
	}

	// The callback's own error is the caller's: never retried, even when
	// it wraps ErrTransient.
	fl = &flakyList{Store: mem, calls: 1}
	err = store.NewRetryStore(fl, fastRetry).List(ctx, "", func(store.ObjectInfo) error {
		return fmt.Errorf("callback: %w", store.ErrTransient)
	})
	if !errors.Is(err, store.ErrTransient) || fl.calls != 2 {
		t.Fatalf("List with a failing callback = %v after %d inner calls; want its error after 1", err, fl.calls-1)
	}
}

// fakeS3 answers like S3 over HTTP: listing the bucket finds nothing, GET of
// "throttled" gets 503 SlowDown twice then the object, anything else is
// 404 NoSuchKey. It counts GETs per object path.
type fakeS3 struct {
	mu   sync.Mutex
	gets map[string]int
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/xml")
	if r.URL.Path == "/bkt" || r.URL.Path == "/bkt/" { // ListObjectsV2 at open
		fmt.Fprint(w, `<ListBucketResult><Name>bkt</Name><Prefix>p/</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>`)
		return
	}
	f.gets[r.URL.Path]++
	switch {
	case r.URL.Path == "/bkt/p/throttled" && f.gets[r.URL.Path] <= 2:
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
	case r.URL.Path == "/bkt/p/throttled":
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
		w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
		w.Header().Set("Content-Length", "7")
		fmt.Fprint(w, "payload")
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message><Key>%s</Key></Error>`, r.URL.Path)
	}
}

// The whole S3 stack (minio-go, translateError, the retry wrapper Open
// installs) retries a real 503 SlowDown answer, and only that.
func TestS3StoreRetriesSlowDown(t *testing.T) {
	fake := &fakeS3{gets: map[string]int{}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	ctx := context.Background()
	s, err := store.Open(ctx, "s3://bkt/p?region=us-east-1&insecure=true&endpoint="+u.Host, store.Credentials{AccessKeyID: "k", SecretAccessKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "throttled")
	if err != nil || string(got) != "payload" {
		t.Fatalf("Get(throttled) = %q, %v; want payload", got, err)
	}
	if _, err := s.Get(ctx, "missing"); !errors.Is(err, store.ErrObjectNotFound) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Get(missing) = %v, want ErrObjectNotFound with the server's message", err)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if fake.gets["/bkt/p/throttled"] != 3 || fake.gets["/bkt/p/missing"] != 1 {
		t.Fatalf("requests per object = %v; want 3 for throttled (2 x 503 + 1), 1 for missing", fake.gets)
	}
}

func eq(want string) func(string) bool { return func(k string) bool { return k == want } }

// A PutIfAbsent whose write landed but whose answer was lost (a 503 after
// the write) is retried; the retry finds its own bytes under the key and
// succeeds, where a plain retry would report ErrObjectExists and make the
// caller believe another writer won.
func TestRetryPutIfAbsentLostAnswer(t *testing.T) {
	ctx := context.Background()
	mem := storetest.NewMem()
	f := storetest.NewFaulty(mem).Add(storetest.Fault{Op: storetest.OpPutIfAbsent, Nth: 1, After: true,
		Err: fmt.Errorf("503 after the write: %w", store.ErrTransient)})
	s := store.NewRetryStore(f, fastRetry)
	if err := s.PutIfAbsent(ctx, "lock", []byte("mine")); err != nil {
		t.Fatalf("PutIfAbsent with a lost answer = %v, want nil", err)
	}
	if f.Calls(storetest.OpPutIfAbsent) != 2 {
		t.Fatalf("PutIfAbsent attempts = %d, want 2", f.Calls(storetest.OpPutIfAbsent))
	}
	if got, _ := mem.Get(ctx, "lock"); string(got) != "mine" {
		t.Fatalf("stored %q, want mine", got)
	}
	// Now taken: another writer, even one retrying, gets ErrObjectExists.
	f.Add(storetest.Fault{Op: storetest.OpPutIfAbsent, Nth: 1, After: true, Err: store.ErrTransient})
	if err := s.PutIfAbsent(ctx, "lock", []byte("theirs")); !errors.Is(err, store.ErrObjectExists) {
		t.Fatalf("PutIfAbsent of other bytes = %v, want ErrObjectExists", err)
	}
}

// The read-back happens only after a transient failure: the same bytes
// already stored by someone else, with no failed attempt of ours, are
// ErrObjectExists; and bytes of another writer found after a transient
// failure that wrote nothing are ErrObjectExists too.
func TestRetryPutIfAbsentExists(t *testing.T) {
	ctx := context.Background()
	mem := storetest.NewMem()
	_ = mem.Put(ctx, "same", []byte("data"))
	_ = mem.Put(ctx, "other", []byte("their data"))
	f := storetest.NewFaulty(mem)
	s := store.NewRetryStore(f, fastRetry)
	if err := s.PutIfAbsent(ctx, "same", []byte("data")); !errors.Is(err, store.ErrObjectExists) {
		t.Fatalf("PutIfAbsent of an existing key's own bytes, no retry = %v, want ErrObjectExists", err)
	}
	if f.Calls(storetest.OpGet) != 0 {
		t.Fatalf("read back without a failed attempt: %d Gets", f.Calls(storetest.OpGet))
	}
	f.Add(storetest.Fault{Op: storetest.OpPutIfAbsent, Nth: 1, Err: store.ErrTransient})
	if err := s.PutIfAbsent(ctx, "other", []byte("mine")); !errors.Is(err, store.ErrObjectExists) {
		t.Fatalf("PutIfAbsent after a transient failure, key taken by other bytes = %v, want ErrObjectExists", err)
	}
	if got, _ := mem.Get(ctx, "other"); string(got) != "their data" {
		t.Fatalf("other = %q, want their data", got)
	}
	// A transient failure of the read-back is retried like any other.
	f.Clear()
	f.Add(storetest.Fault{Op: storetest.OpPutIfAbsent, Nth: 1, After: true, Err: store.ErrTransient})
	f.Add(storetest.Fault{Op: storetest.OpGet, Nth: 1, Err: store.ErrTransient})
	if err := s.PutIfAbsent(ctx, "fresh", []byte("mine")); err != nil {
		t.Fatalf("PutIfAbsent with a lost answer and a failed read-back = %v, want nil", err)
	}
}

// GetMax is retried like Get; ErrObjectTooLarge and ErrNotAtomic are
// answers, not failures, and are not retried.
func TestRetryGetMaxAndNotAtomic(t *testing.T) {
	ctx := context.Background()
	mem := storetest.NewMem()
	_ = mem.Put(ctx, "k", []byte("0123456789"))
	f := storetest.NewFaulty(mem).Add(storetest.Fault{Op: storetest.OpGet, Times: 2, Err: store.ErrTransient})
	s := store.NewRetryStore(f, fastRetry)
	if got, err := s.GetMax(ctx, "k", 10); err != nil || string(got) != "0123456789" || f.Gets("k") != 3 {
		t.Fatalf("GetMax = %q, %v after %d Gets; want the object after 3", got, err, f.Gets("k"))
	}
	if _, err := s.GetMax(ctx, "k", 9); !errors.Is(err, store.ErrObjectTooLarge) || f.Gets("k") != 4 {
		t.Fatalf("GetMax over the bound = %v after %d Gets; want ErrObjectTooLarge after 1 more", err, f.Gets("k"))
	}
	f.WithoutConditionalWrites()
	if err := s.PutIfAbsent(ctx, "new", []byte("x")); !errors.Is(err, store.ErrNotAtomic) || f.Calls(storetest.OpPutIfAbsent) != 1 {
		t.Fatalf("PutIfAbsent = %v after %d calls; want ErrNotAtomic after 1", err, f.Calls(storetest.OpPutIfAbsent))
	}
}
