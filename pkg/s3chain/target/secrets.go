package target

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// Secret keys, as in a Kubernetes Secret referenced by a StorageClass or
// VolumeSnapshotClass, or in a credentials file.
const (
	KeyAccessKeyID     = "accessKeyID"
	KeySecretAccessKey = "secretAccessKey"
	KeySessionToken    = "sessionToken"
	KeyEncryptionKey   = "encryptionKey"
)

// ErrBadSecret: a secret is malformed (an encryption key that is not 32
// bytes in hex or base64, an access key without its secret, a bad file line).
var ErrBadSecret = errors.New("invalid backup credentials")

// Secrets are the credentials of a backup target. Empty fields are absent.
type Secrets struct {
	AccessKeyID, SecretAccessKey, SessionToken string
	// EncryptionKey is 32 bytes written as 64 hex digits or in base64.
	EncryptionKey string
}

// String hides every value, so a Secrets never reaches a log by accident.
func (s Secrets) String() string { return "Secrets{redacted}" }

// SecretsFromMap reads the known keys of a CSI request's secrets map.
func SecretsFromMap(m map[string]string) Secrets {
	return Secrets{AccessKeyID: m[KeyAccessKeyID], SecretAccessKey: m[KeySecretAccessKey],
		SessionToken: m[KeySessionToken], EncryptionKey: m[KeyEncryptionKey]}
}

// ReadSecretsFile reads a credentials file of key=value lines ('#' starts a
// comment) with the keys above; a value in matching double or single
// quotes loses them, as in an env file. A key other than those above is an
// error, not ignored: a misspelt key would otherwise surface much later as
// "access denied". Errors wrap ErrBadSecret or the os error; they name the
// line number and key, never a value.
func ReadSecretsFile(path string) (Secrets, error) {
	f, err := os.Open(path)
	if err != nil {
		return Secrets{}, fmt.Errorf("credentials file: %w", err)
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return Secrets{}, fmt.Errorf("%w: %s line %d is not key=value", ErrBadSecret, path, n)
		}
		k, v = strings.TrimSpace(k), unquote(strings.TrimSpace(v))
		if !knownSecretKey(k) {
			return Secrets{}, fmt.Errorf("%w: %s line %d: unknown key %q (the keys are %s, %s, %s, %s; names are case-sensitive)",
				ErrBadSecret, path, n, k, KeyAccessKeyID, KeySecretAccessKey, KeySessionToken, KeyEncryptionKey)
		}
		m[k] = v
	}
	return SecretsFromMap(m), sc.Err()
}

func knownSecretKey(k string) bool {
	switch k {
	case KeyAccessKeyID, KeySecretAccessKey, KeySessionToken, KeyEncryptionKey:
		return true
	}
	return false
}

// unquote strips one pair of matching double or single quotes around v.
func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

// merge overlays the non-empty credentials of o on s: a request's access
// keys replace the file's as a pair, its encryption key replaces the file's.
func (s Secrets) merge(o Secrets) Secrets {
	if o.AccessKeyID != "" {
		s.AccessKeyID, s.SecretAccessKey, s.SessionToken = o.AccessKeyID, o.SecretAccessKey, o.SessionToken
	}
	if o.EncryptionKey != "" {
		s.EncryptionKey = o.EncryptionKey
	}
	return s
}

// Credentials returns the S3 credentials. Errors wrap ErrBadSecret when an
// access key id comes without its secret key.
func (s Secrets) Credentials() (store.Credentials, error) {
	if (s.AccessKeyID == "") != (s.SecretAccessKey == "") {
		return store.Credentials{}, fmt.Errorf("%w: %s and %s must be given together", ErrBadSecret, KeyAccessKeyID, KeySecretAccessKey)
	}
	return store.Credentials{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey, SessionToken: s.SessionToken}, nil
}

// Key decodes the encryption key: nil when none is set, else 32 bytes from
// 64 hex digits or standard base64. Errors wrap ErrBadSecret.
func (s Secrets) Key() ([]byte, error) {
	k := s.EncryptionKey
	if k == "" {
		return nil, nil
	}
	if b, err := hex.DecodeString(k); err == nil && len(b) == 32 {
		return b, nil
	}
	if b, err := base64.StdEncoding.DecodeString(k); err == nil && len(b) == 32 {
		return b, nil
	}
	return nil, fmt.Errorf("%w: %s must be 32 bytes as 64 hex digits or base64 (e.g. `openssl rand -hex 32`)", ErrBadSecret, KeyEncryptionKey)
}
