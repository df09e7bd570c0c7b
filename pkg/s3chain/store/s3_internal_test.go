package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
)

// OpenS3IgnoringIfNoneMatch opens an s3:// target like Open, but its
// conditional PUTs go out without If-None-Match, as they land on a server
// that ignores the header: fault injection for the ErrNotAtomic fallback
// on a real server. For the external tests only.
func OpenS3IgnoringIfNoneMatch(ctx context.Context, rawURL string, creds Credentials) (Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	t, err := parseS3URL(u)
	if err != nil {
		return nil, err
	}
	s3, err := newS3Store(t, creds)
	if err != nil {
		return nil, err
	}
	s3.ignoreIfNoneMatch = true
	return checkS3(ctx, t, s3)
}

// fakeCondServer answers probe PUTs the way a kind of server would:
// honouring If-None-Match, ignoring it, refusing it, or failing.
type fakeCondServer struct {
	objs    map[string]bool
	ignore  bool
	fail    []error // answers of the next PUTs, in order (nil: normal)
	puts    int
	deleted []string
}

func (f *fakeCondServer) put(_ context.Context, key string, _ []byte) error {
	f.puts++
	if len(f.fail) > 0 { // nil: answer normally
		err := f.fail[0]
		if f.fail = f.fail[1:]; err != nil {
			return err
		}
	}
	if f.objs[key] && !f.ignore {
		return fmt.Errorf("412: %w", ErrObjectExists)
	}
	f.objs[key] = true
	return nil
}

func (f *fakeCondServer) del(_ context.Context, key string) error {
	delete(f.objs, key)
	f.deleted = append(f.deleted, key)
	return nil
}

func TestCondProbe(t *testing.T) {
	ctx := context.Background()
	notImpl := fmt.Errorf("s3 put: %w", minio.ErrorResponse{Code: "NotImplemented", StatusCode: 501})
	for _, tc := range []struct {
		name     string
		srv      fakeCondServer
		want     []error // of three checks in a row
		putsSeen int
	}{
		{"honours", fakeCondServer{}, []error{nil, nil, nil}, 2},
		{"ignores", fakeCondServer{ignore: true}, []error{ErrNotAtomic, ErrNotAtomic, ErrNotAtomic}, 2},
		{"refuses the header", fakeCondServer{fail: []error{notImpl}}, []error{ErrNotAtomic, ErrNotAtomic, ErrNotAtomic}, 1},
		// A failed probe is not remembered: the next check probes again.
		{"transient, then honours", fakeCondServer{fail: []error{nil, ErrTransient}}, []error{ErrTransient, nil, nil}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := tc.srv
			srv.objs = map[string]bool{}
			var c condProbe
			for i, want := range tc.want {
				err := c.check(ctx, srv.put, srv.del)
				if (want == nil) != (err == nil) || !errors.Is(err, want) {
					t.Fatalf("check #%d = %v, want %v", i+1, err, want)
				}
			}
			if srv.puts != tc.putsSeen {
				t.Errorf("probe PUTs = %d, want %d (the answer is cached)", srv.puts, tc.putsSeen)
			}
			if len(srv.objs) != 0 {
				t.Errorf("probe objects left behind: %v", srv.objs)
			}
			for _, k := range srv.deleted {
				if !strings.HasPrefix(k, probePrefix) || ValidateKey(k) == nil {
					t.Errorf("probe key %q is not under %q or would be listed", k, probePrefix)
				}
			}
		})
	}
}

// The answers of conditional writes map to the store's sentinels.
func TestTranslateConditionalErrors(t *testing.T) {
	sentinels := []error{ErrObjectExists, ErrTransient, ErrObjectNotFound, ErrAccessDenied, ErrBadTarget}
	for _, tc := range []struct {
		resp minio.ErrorResponse
		want error // nil: no sentinel, a permanent error
	}{
		{minio.ErrorResponse{Code: "PreconditionFailed", StatusCode: 412}, ErrObjectExists},
		{minio.ErrorResponse{StatusCode: 412}, ErrObjectExists}, // no body
		{minio.ErrorResponse{Code: "ConditionalRequestConflict", StatusCode: 409}, ErrTransient},
		{minio.ErrorResponse{Code: "NotImplemented", StatusCode: 501}, nil},
		{minio.ErrorResponse{StatusCode: 501}, nil},
		{minio.ErrorResponse{Code: "SlowDown", StatusCode: 503}, ErrTransient},
	} {
		err := translateError("put-if-absent", "k", tc.resp)
		for _, s := range sentinels {
			if errors.Is(err, s) != (s == tc.want) {
				t.Errorf("%s %d: translated to %v; want sentinel %v only", tc.resp.Code, tc.resp.StatusCode, err, tc.want)
			}
		}
	}
}

// A 403 AccessDenied is ErrObjectLocked (and ErrAccessDenied) only when
// its message says the object is locked, as AWS and versitygw word it.
func TestTranslateObjectLocked(t *testing.T) {
	locked := translateError("delete", "k", minio.ErrorResponse{Code: "AccessDenied", StatusCode: 403,
		Message: "Access Denied because object protected by object lock."})
	denied := translateError("delete", "k", minio.ErrorResponse{Code: "AccessDenied", StatusCode: 403, Message: "Access Denied."})
	if !errors.Is(locked, ErrObjectLocked) || !errors.Is(locked, ErrAccessDenied) {
		t.Errorf("locked: %v", locked)
	}
	if errors.Is(denied, ErrObjectLocked) || !errors.Is(denied, ErrAccessDenied) {
		t.Errorf("denied: %v", denied)
	}
}
