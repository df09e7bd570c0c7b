package testutil

import (
	"os"
	"os/exec"
	"testing"
)

// StartS3WithUsers is StartS3 with versitygw's internal IAM (--iam-dir), so
// that AddUser can add accounts besides the root one, as a provider hands
// out keys that may use a bucket but not create one.
func StartS3WithUsers(t testing.TB) S3Server {
	t.Helper()
	return startS3(t, nil, s3Options{users: true})
}

// AddUser creates the account access/secret with versitygw's role: "user"
// may use the buckets it owns and create none, "userplus" may also create
// buckets, "admin" may do anything. Only on a StartS3WithUsers server.
func (s S3Server) AddUser(t testing.TB, access, secret, role string) {
	t.Helper()
	s.admin(t, "create-user", "--access", access, "--secret", secret, "--role", role)
}

// SetBucketOwner makes the account access the owner of bucket.
func (s S3Server) SetBucketOwner(t testing.TB, bucket, access string) {
	t.Helper()
	s.admin(t, "change-bucket-owner", "--bucket", bucket, "--owner", access)
}

// admin runs "versitygw admin" as the root account against the server.
func (s S3Server) admin(t testing.TB, args ...string) {
	t.Helper()
	if s.iamDir == "" {
		t.Fatal("versitygw admin needs a server from StartS3WithUsers")
	}
	cmd := exec.Command(s.bin, append([]string{"admin", "--endpoint-url", "http://" + s.Endpoint}, args...)...)
	// The root keys go through the environment, not argv (as at start).
	cmd.Env = append(os.Environ(), "ADMIN_ACCESS_KEY_ID="+s.AccessKey, "ADMIN_SECRET_ACCESS_KEY="+s.SecretKey)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("versitygw admin %s: %v\n%s", args[0], err, out)
	}
}
