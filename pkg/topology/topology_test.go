package topology

import (
	"regexp"
	"strings"
	"testing"
)

// Key follows the CSI spec's rule for topology keys (message Topology):
// an optional domain-style prefix and a name, each at most 63 characters.
func TestKeyFollowsCSITopologyRule(t *testing.T) {
	prefix, name, found := strings.Cut(Key, "/")
	if !found || strings.Contains(name, "/") {
		t.Fatalf("Key %q is not PREFIX/NAME", Key)
	}
	// RFC 1035 §2.3.1 labels, lower case as the spec asks of the prefix.
	prefixRule := regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$`)
	nameRule := regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)
	if len(prefix) > 63 || !prefixRule.MatchString(prefix) {
		t.Errorf("prefix %q breaks the CSI rule (<= 63 of [a-z0-9.-], domain name notation)", prefix)
	}
	if len(name) > 63 || !nameRule.MatchString(name) {
		t.Errorf("name %q breaks the CSI rule (<= 63 of [A-Za-z0-9._-], alphanumeric at both ends)", name)
	}
}
