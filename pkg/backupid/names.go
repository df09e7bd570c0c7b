package backupid

import (
	"fmt"
	"regexp"
	"strings"
)

// The names a reference is made of. s3chain.ValidChainName and
// s3chain.ValidBackupID wrap these checks' errors in s3chain.ErrInvalidChain.

// MaxChainLen is the longest chain name in bytes: a Kubernetes
// "NAMESPACE/NAME" (63 + 1 + 36 for a pvc-UUID) or a CSI volume name fits,
// and the escaped key stays far below S3's 1024-byte key limit.
const MaxChainLen = 100

// MaxBackupIDLen is the longest backup id in bytes.
const MaxBackupIDLen = 64

// targetNamePattern is the shape of a target name: short, and free of ':'
// and '@' so that it can lead a reference.
var targetNamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,14}[a-z0-9])?$`)

// ValidTargetName reports whether name can name a target: 1-16 bytes of
// [a-z0-9-], starting and ending with a letter or digit.
func ValidTargetName(name string) bool { return targetNamePattern.MatchString(name) }

// CheckChain returns nil if name can name a chain, else an error saying
// why. A name is 1..100 bytes of [A-Za-z0-9._-] segments separated by
// single '/', with no empty, "." or ".." segment (like "NAMESPACE/NAME"
// or a CSI volume name "pvc-<uuid>").
func CheckChain(name string) error {
	if name == "" || len(name) > MaxChainLen {
		return fmt.Errorf("chain name %q must be 1..%d bytes", name, MaxChainLen)
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("chain name %q has an empty, \".\" or \"..\" segment", name)
		}
		for i := 0; i < len(seg); i++ {
			if !IsNameByte(seg[i]) {
				return fmt.Errorf("chain name %q: byte %q not in [A-Za-z0-9._-/]", name, seg[i])
			}
		}
	}
	return nil
}

// CheckBackupID returns nil if id can name a backup, else an error saying
// why: 1..64 bytes of [A-Za-z0-9._-] starting with a letter or digit.
// Latest is reserved for the newest backup.
func CheckBackupID(id string) error {
	if id == "" || len(id) > MaxBackupIDLen || id == Latest || !IsAlnum(id[0]) {
		return fmt.Errorf("backup id %q must be 1..%d bytes, start with a letter or digit, and not be \"latest\"", id, MaxBackupIDLen)
	}
	for i := 0; i < len(id); i++ {
		if !IsNameByte(id[i]) {
			return fmt.Errorf("backup id %q: byte %q not in [A-Za-z0-9._-]", id, id[i])
		}
	}
	return nil
}

// IsAlnum reports whether c is an ASCII letter or digit.
func IsAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// IsNameByte reports whether c may stand in a chain segment or backup id.
func IsNameByte(c byte) bool { return IsAlnum(c) || c == '.' || c == '_' || c == '-' }
