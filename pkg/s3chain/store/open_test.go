package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

func TestOpenStoreBadURLs(t *testing.T) {
	dir := t.TempDir()
	for _, raw := range []string{
		"",
		"/abs/path",
		"relative/dir",
		"ftp://host/dir",
		"file://host/dir",              // two slashes: "host" is a host
		"file:relative",                // opaque
		"file:///",                     // the root directory itself
		"file:///nonexistent/chainvol", // must exist
		"file://" + dir + "/../x",
		"file://" + dir + "/./",
		"file://" + dir + "?sync=1",
		"file://" + dir + "#frag",
		"s3://",
		"s3://Upper_Case",
		"s3://ab",              // too short for a bucket name
		"s3://bucket//double",  // empty prefix segment
		"s3://bucket/a/../b",   // dot-dot in the prefix
		"s3://bucket/sp%20ace", // space in the prefix
		"s3://bucket?endpoint=http://host:9000",
		"s3://bucket?endpoint=host:99999",
		"s3://bucket?endpoint=",
		"s3://bucket?insecure=maybe",
		"s3://bucket?endpoint=a:1&endpoint=b:2",
		"s3://bucket?secret=hunter2",
		"s3://AKIA:hunter2@bucket?endpoint=host:9000",
		"s3://bucket\x7f",
		"s3://bucket?lock=governance",             // no retain=
		"s3://bucket?retain=30d",                  // no lock=
		"s3://bucket?lock=strict&retain=30d",      // no such mode
		"s3://bucket?lock=compliance&retain=-1d",  // not positive
		"s3://bucket?lock=compliance&retain=soon", // no period
	} {
		t.Run(fmt.Sprintf("%q", raw), func(t *testing.T) {
			s, err := store.Open(context.Background(), raw, store.Credentials{})
			if !errors.Is(err, store.ErrBadTarget) {
				t.Fatalf("Open = %v, %v; want ErrBadTarget", s, err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("error leaks a secret: %v", err)
			}
			if !strings.Contains(err.Error(), "want file:///") && !strings.Contains(err.Error(), "file target") {
				t.Fatalf("error does not say what a valid URL looks like: %v", err)
			}
		})
	}
}

func TestOpenStoreFileURL(t *testing.T) {
	dir := t.TempDir()
	for _, raw := range []string{"file://" + dir, "file://" + dir + "/"} {
		s, err := store.Open(context.Background(), raw, store.Credentials{})
		if err != nil {
			t.Fatalf("Open(%q): %v", raw, err)
		}
		if got := s.String(); got != "file://"+dir {
			t.Errorf("Open(%q).String() = %q, want %q", raw, got, "file://"+dir)
		}
	}
}

// Credentials print without their secret, whatever the verb.
func TestCredentialsRedacted(t *testing.T) {
	c := store.Credentials{AccessKeyID: "AKID", SecretAccessKey: "hunter2", SessionToken: "tok3n"}
	for _, verb := range []string{"%v", "%+v", "%s", "%#v"} {
		got := fmt.Sprintf(verb, c)
		if strings.Contains(got, "hunter2") || strings.Contains(got, "tok3n") || !strings.Contains(got, "AKID") {
			t.Errorf("Sprintf(%s, creds) = %q: leaks a secret or hides the key id", verb, got)
		}
	}
}

func TestValidateKey(t *testing.T) {
	for key, ok := range map[string]bool{
		"a": true, "chains/vol-1/0001.blk": true, "A.B_c-d/e": true, ".hidden": true, "a..b": true,
		"": false, "/a": false, "a/": false, "a//b": false, "..": false, "a/../b": false, "./a": false,
		"a b": false, "a~tmp1": false, "a%2F": false, "é": false, strings.Repeat("x", 1025): false,
	} {
		err := store.ValidateKey(key)
		if ok != (err == nil) || (err != nil && !errors.Is(err, store.ErrInvalidKey)) {
			t.Errorf("ValidateKey(%.20q) = %v, want ok=%v", key, err, ok)
		}
	}
}
