package store

import (
	"fmt"
	"strings"
)

// MaxKeyLen is the longest accepted object key, in bytes: S3's limit on
// object key names (S3 User Guide, "Naming Amazon S3 objects").
const MaxKeyLen = 1024

// ValidateKey checks an object key: 1..MaxKeyLen bytes of [A-Za-z0-9._/-],
// relative (no leading "/"), no trailing "/", no empty, "." or ".." path
// segment. The same rule for every Store means a chain written to a local
// directory can be copied to S3 (and back) unchanged, and that no key can
// escape a file store's root. No escaping is offered: the chain format only
// produces keys of this alphabet. Errors: ErrInvalidKey.
func ValidateKey(key string) error {
	if key == "" || len(key) > MaxKeyLen {
		return fmt.Errorf("%w: length %d not in 1..%d", ErrInvalidKey, len(key), MaxKeyLen)
	}
	if i := strings.IndexFunc(key, func(r rune) bool { return !keyRune(r) }); i >= 0 {
		return fmt.Errorf("%w: %q: character %q at byte %d is outside [A-Za-z0-9._/-]", ErrInvalidKey, key, key[i], i)
	}
	for _, seg := range strings.Split(key, "/") {
		switch seg {
		case "":
			return fmt.Errorf("%w: %q: empty path segment (leading, trailing or double slash)", ErrInvalidKey, key)
		case ".", "..":
			return fmt.Errorf("%w: %q: %q path segment", ErrInvalidKey, key, seg)
		}
	}
	return nil
}

// ValidatePrefix checks a List prefix: empty (everything) or up to
// MaxKeyLen bytes of the key alphabet with no leading "/" and no "."/".."
// segment; unlike a key it may end in "/" or in a partial segment.
// Errors: ErrInvalidKey.
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	// A prefix ending in "/" is a key with a trailing segment still to come.
	probe := prefix
	if strings.HasSuffix(probe, "/") {
		probe += "x"
	}
	if err := ValidateKey(probe); err != nil {
		return fmt.Errorf("list prefix: %w", err)
	}
	return nil
}

func keyRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '.' || r == '_' || r == '-' || r == '/'
}
