package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// roundTrip writes and reads one object through a store opened on url.
func roundTrip(t *testing.T, url string, creds store.Credentials) error {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, url, creds)
	if err != nil {
		return err
	}
	if err := st.Put(ctx, "auth/probe", []byte("hello")); err != nil {
		return err
	}
	got, err := st.Get(ctx, "auth/probe")
	if err != nil || string(got) != "hello" {
		t.Fatalf("get after put: %q, %v", got, err)
	}
	return nil
}

// TestS3PrivateCA: a target over HTTPS whose certificate a private CA
// signed works with ca=/path/to/ca.pem, and fails without it (the system
// trust store does not know the CA), and with a bundle of another CA.
// A missing or empty CA file is a bad target (issue 17).
func TestS3PrivateCA(t *testing.T) {
	srv := testutil.StartS3TLS(t)
	creds := store.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}
	url := srv.URL("tls")
	if !strings.Contains(url, "ca=") || strings.Contains(url, "insecure") {
		t.Fatalf("TLS target URL %s", url)
	}
	if err := roundTrip(t, url, creds); err != nil {
		t.Fatalf("over TLS with the private CA: %v", err)
	}
	noCA := strings.Replace(url, "ca="+strings.ReplaceAll(srv.CAFile, "/", "%2F"), "ca=", 1)
	noCA = strings.Replace(noCA, "&ca=", "", 1)
	noCA = strings.Replace(noCA, "ca=&", "", 1)
	if strings.Contains(noCA, "ca=") {
		t.Fatalf("could not drop ca= from %s", noCA)
	}
	// An untrusted certificate is a bad target at once, not an outage
	// retried for seconds.
	start := time.Now()
	if err := roundTrip(t, noCA, creds); !errors.Is(err, store.ErrBadTarget) || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: %v, want ErrBadTarget naming the certificate", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("an untrusted certificate took %v to report: retried as transient", d)
	}
	other := testutil.StartS3TLS(t) // another CA
	wrong := strings.Replace(url, strings.ReplaceAll(srv.CAFile, "/", "%2F"), strings.ReplaceAll(other.CAFile, "/", "%2F"), 1)
	if err := roundTrip(t, wrong, creds); err == nil {
		t.Error("a bundle of another CA was accepted")
	}
	empty := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{empty, "/nonexistent/ca.pem"} {
		u := strings.Replace(url, strings.ReplaceAll(srv.CAFile, "/", "%2F"), strings.ReplaceAll(bad, "/", "%2F"), 1)
		if _, err := store.Open(context.Background(), u, creds); !errors.Is(err, store.ErrBadTarget) {
			t.Errorf("ca=%s: %v, want ErrBadTarget", bad, err)
		}
	}
}

// TestS3CredentialsFromAWSEnv: with no static credentials, the keys come
// from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (minio-go's chain), and
// from the shared credentials file when the variables are unset; with
// neither the requests are anonymous and refused. Static credentials win
// over the environment.
func TestS3CredentialsFromAWSEnv(t *testing.T) {
	srv := testutil.StartS3(t)
	url := srv.URL("env")
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(home, "none"))
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	if err := roundTrip(t, url, store.Credentials{}); !errors.Is(err, store.ErrAccessDenied) {
		t.Fatalf("anonymous: %v, want ErrAccessDenied", err)
	}

	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	if err := roundTrip(t, url, store.Credentials{}); err != nil {
		t.Fatalf("credentials only in AWS_* variables: %v", err)
	}
	bad := store.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: "wrong-secret"}
	if err := roundTrip(t, url, bad); !errors.Is(err, store.ErrAccessDenied) {
		t.Errorf("static credentials must win over the environment: %v", err)
	}

	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	shared := filepath.Join(home, "credentials")
	data := "[default]\naws_access_key_id = nope\naws_secret_access_key = nope\n[backup]\naws_access_key_id = " +
		srv.AccessKey + "\naws_secret_access_key = " + srv.SecretKey + "\n"
	if err := os.WriteFile(shared, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", shared)
	t.Setenv("AWS_PROFILE", "backup")
	if err := roundTrip(t, url, store.Credentials{}); err != nil {
		t.Fatalf("credentials from the shared file, profile backup: %v", err)
	}
}

// TestS3URLAuthParameters: ca, style and imds parse, appear in the
// canonical URL, and bad values are refused naming the parameter.
func TestS3URLAuthParameters(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ url, want string }{
		{"s3://bkt1?endpoint=127.0.0.1:1&ca=relative.pem", "absolute path"},
		{"s3://bkt1?endpoint=127.0.0.1:1&style=dns", "path, virtual or auto"},
		{"s3://bkt1?endpoint=127.0.0.1:1&imds=maybe", `imds="maybe"`},
		{"s3://bkt1?endpoint=127.0.0.1:1&insecure=true&ca=/etc/ca.pem", "HTTPS"},
	} {
		if _, err := store.Open(ctx, c.url, store.Credentials{}); !errors.Is(err, store.ErrBadTarget) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrBadTarget naming %q", c.url, err, c.want)
		}
	}
}
