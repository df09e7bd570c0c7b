package volume

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

// Chain namespaces of volumes whose PVC is unknown. Their first segment holds
// '_', which a Kubernetes namespace (a DNS-1123 label) never does, so no PVC
// chain "NAMESPACE/NAME" can take them, and the two differ from each other.
const (
	volumeChainPrefix       = "_volume/"
	hashedVolumeChainPrefix = "_volume-sha256/"
)

// dnsLabel is a Kubernetes namespace name (RFC 1123 label, Kubernetes API
// conventions "Names"): it never holds '_' or '/'.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// ChainOf is the chain of a volume, an injective function of its source
// so that no two volumes ever share a chain (issue 12):
//
//   - with PVC metadata from the external-provisioner (a namespace that is a
//     DNS label, a name that fits): "NAMESPACE/NAME", so a re-created
//     StatefulSet finds its own chains; a namespace holds no '/', so the
//     pair is recoverable from the name;
//   - else "_volume/" and the CSI volume name escaped by escapeChainSegment
//     (reversible, so distinct names stay distinct);
//   - else, when that exceeds s3chain.MaxChainNameLen (100 bytes),
//     "_volume-sha256/" and the 64 hex digits of the SHA-256 of the name.
//
// The "_volume" namespaces start with '_', which no namespace can.
func ChainOf(lv backend.LVol) string {
	if rec := Of(lv); dnsLabel.MatchString(rec.PVCNamespace) && rec.PVCName != "" {
		ns, n := rec.PVCNamespace, rec.PVCName
		if c := ns + "/" + n; s3chain.ValidChainName(c) == nil {
			return c
		}
	}
	if c := volumeChainPrefix + escapeChainSegment(lv.Name); lv.Name != "" && len(c) <= s3chain.MaxChainNameLen {
		return c
	}
	h := sha256.Sum256([]byte(lv.Name))
	return hashedVolumeChainPrefix + hex.EncodeToString(h[:])
}

// escapeChainSegment makes s one chain name segment: letters, digits and
// '-' stay, every other byte becomes "_" and two lower-case hex digits (the
// escape s3chain uses for keys). Distinct inputs give distinct outputs, and
// the result is never "." or "..".
func escapeChainSegment(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "_%02x", c)
		}
	}
	return b.String()
}
