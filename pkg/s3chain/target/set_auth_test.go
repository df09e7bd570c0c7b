package target

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// TestOpenS3AuthAsOperatorsRunIt opens, through the target set as the
// driver does, one target over TLS with a private CA (ca= in the URL) and
// keys from a rotating credentials file, and one whose keys exist only in
// the AWS_* variables (no file, no request secrets) (issue 17).
func TestOpenS3AuthAsOperatorsRunIt(t *testing.T) {
	ctx := context.Background()
	tlsSrv := testutil.StartS3TLS(t)
	envSrv := testutil.StartS3(t)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_ACCESS_KEY_ID", envSrv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", envSrv.SecretKey)

	tlsSet, err := NewSet([]string{"private=" + tlsSrv.URL("tls")}, "", Secrets{})
	if err != nil {
		t.Fatal(err)
	}
	vol := newSecretVolume(t, credsFor(tlsSrv.AccessKey, tlsSrv.SecretKey))
	if err := tlsSet.UseCredentialsFile(vol.path()); err != nil {
		t.Fatal(err)
	}
	if _, err := tlsSet.Open(ctx, "private", nil); err != nil {
		t.Fatalf("private-CA TLS target with a credentials file: %v", err)
	}

	envSet, err := NewSet([]string{"aws=" + envSrv.URL("env")}, "", Secrets{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envSet.Open(ctx, "aws", nil); err != nil {
		t.Fatalf("target with keys only in AWS_* variables: %v", err)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	if _, err := envSet.Open(ctx, "aws", nil); !errors.Is(err, store.ErrAccessDenied) {
		t.Fatalf("wrong AWS_SECRET_ACCESS_KEY: %v, want ErrAccessDenied", err)
	}
}
