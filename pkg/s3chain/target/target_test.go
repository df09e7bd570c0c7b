package target

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"shop/db@latest", "shop/db@latest", true},
		{"offsite:shop/db@20261129T101500Z", "offsite:shop/db@20261129T101500Z", true},
		{"shop/db", "", false},
		{"Off_site:shop/db@latest", "", false},
		{"offsite:../etc@latest", "", false},
		{"offsite:shop/db@", "", false},
	} {
		r, err := ParseRef(tc.in)
		if tc.ok != (err == nil) || (tc.ok && r.String() != tc.want) {
			t.Errorf("ParseRef(%q) = %v, %v", tc.in, r, err)
		}
		if err != nil && !errors.Is(err, ErrBadRef) {
			t.Errorf("ParseRef(%q) error does not wrap ErrBadRef: %v", tc.in, err)
		}
	}
}

func TestSetLookup(t *testing.T) {
	s, err := NewSet([]string{"offsite=s3://bkt/p?endpoint=h:1", "local=file:///x"}, "file:///unused", Secrets{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Default() != "offsite" {
		t.Fatalf("default %q", s.Default())
	}
	if _, err := s.Lookup("nope"); !errors.Is(err, ErrUnknownTarget) || !strings.Contains(err.Error(), "offsite, local") {
		t.Fatalf("unknown target: %v", err)
	}
	for _, bad := range [][]string{{"noequals"}, {"a=file:///x", "a=file:///y"}, {"UPPER=file:///x"}} {
		if _, err := NewSet(bad, "", Secrets{}); err == nil {
			t.Errorf("NewSet(%v) accepted", bad)
		}
	}
	// A URL is checked at NewSet, not at the first Open (issue 33).
	for _, bad := range []string{"a=x", "a=s3://b/p", "a=file://host/x", "a=s3://bkt/p?bogus=1"} {
		if _, err := NewSet([]string{bad}, "", Secrets{}); !errors.Is(err, store.ErrBadTarget) || !strings.Contains(err.Error(), `backup target "a"`) {
			t.Errorf("NewSet(%q) = %v, want ErrBadTarget naming target a", bad, err)
		}
	}
	d, _ := NewSet(nil, "file:///var/lib/chainvol/backups", Secrets{})
	if tg, _ := d.Lookup(""); tg.Name != DefaultName || tg.URL != "file:///var/lib/chainvol/backups" {
		t.Fatalf("embedded default: %+v", tg)
	}
}

func TestSecrets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "creds")
	key := strings.Repeat("ab", 32)
	data := fmt.Sprintf("# comment\naccessKeyID = AK\nsecretAccessKey=SK\nencryptionKey=%s\n", key)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSecretsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(s) != "Secrets{redacted}" || fmt.Sprintf("%v", s) == "" {
		t.Fatalf("secrets printed: %v", s)
	}
	merged := s.merge(SecretsFromMap(map[string]string{KeyAccessKeyID: "AK2", KeySecretAccessKey: "SK2"}))
	if c, err := merged.Credentials(); err != nil || c.AccessKeyID != "AK2" || c.SecretAccessKey != "SK2" {
		t.Fatalf("merge: %v", err)
	}
	if k, err := merged.Key(); err != nil || len(k) != 32 || k[0] != 0xab {
		t.Fatalf("key: %x %v", k, err)
	}
	if _, err := (Secrets{EncryptionKey: "short"}).Key(); !errors.Is(err, ErrBadSecret) || strings.Contains(err.Error(), "short") {
		t.Fatalf("bad key error: %v", err)
	}
	if _, err := (Secrets{AccessKeyID: "a"}).Credentials(); !errors.Is(err, ErrBadSecret) {
		t.Fatalf("half credentials: %v", err)
	}
}

func TestOpenFileTarget(t *testing.T) {
	dir := t.TempDir()
	s, _ := NewSet(nil, "file://"+dir, Secrets{})
	repo, err := s.Open(context.Background(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if chains, err := repo.Chains(context.Background()); err != nil || len(chains) != 0 {
		t.Fatalf("chains %v %v", chains, err)
	}
	if _, err := s.Open(context.Background(), "", map[string]string{KeyEncryptionKey: "bad"}); !errors.Is(err, ErrBadSecret) {
		t.Fatalf("bad key: %v", err)
	}
}

// TestSecretsFileMistakes: a misspelt key is an error naming it (it used
// to be ignored, and the operator saw "access denied" much later), quoted
// values lose their quotes (they used to be sent with them), and no error
// shows a value (newcomer run).
func TestSecretsFileMistakes(t *testing.T) {
	dir := t.TempDir()
	write := func(data string) string {
		p := filepath.Join(dir, fmt.Sprintf("creds-%d", len(data)))
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	_, err := ReadSecretsFile(write("accessKey=AKSECRETVALUE\nsecret=SKSECRETVALUE\n"))
	if !errors.Is(err, ErrBadSecret) || !strings.Contains(err.Error(), `"accessKey"`) || !strings.Contains(err.Error(), KeyAccessKeyID) ||
		strings.Contains(err.Error(), "SECRETVALUE") {
		t.Fatalf("misspelt key: %v", err)
	}
	s, err := ReadSecretsFile(write("accessKeyID=\"AK\"\nsecretAccessKey='SK'\nsessionToken=\"unbalanced\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.AccessKeyID != "AK" || s.SecretAccessKey != "SK" || s.SessionToken != `"unbalanced` {
		t.Fatalf("quoted values read as %q %q %q", s.AccessKeyID, s.SecretAccessKey, s.SessionToken)
	}
}
