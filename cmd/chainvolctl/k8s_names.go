package main

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The names of the Kubernetes objects chainvolctl makes. Each function maps
// distinct inputs to distinct names (issue 24): a name that would restore
// another backup, or a label that would prune another claim's snapshots,
// is worse than an unreadable one. Where the readable form is not an exact
// (decodable) image of its input, the name is a readable lossy prefix, '-',
// and nameHashLen hex digits of the SHA-256 of the exact input; each
// function's comment says why its hashed names never equal its plain ones.

// nameHashLen is the number of hex digits of a name's hash suffix: 80 bits,
// like the content names, so a collision is out of reach even for inputs
// chosen to collide.
const nameHashLen = 20

// defaultBackupID matches the ids s3chain.NewBackupID makes (and the same
// shape without the random part): only the T and Z are upper case, so
// their lower-case form decodes back to them.
var defaultBackupID = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z(-[0-9a-f]{8})?$`)

// notAlnum is what a readable prefix folds into a single '-'.
var notAlnum = regexp.MustCompile(`[^a-z0-9]+`)

// contentName is the VolumeSnapshotContent of a backup's snapshot handle
// (backup:TARGET:CHAIN@ID): "chainvol-" and 20 hex digits of its SHA-256.
// The handle names the backup exactly, so distinct backups get distinct
// contents, and the name never changes (an import can be repeated, and
// older versions made the same names).
func contentName(handle string) string {
	sum := sha256.Sum256([]byte(handle))
	return "chainvol-" + hex.EncodeToString(sum[:nameHashLen/2])
}

// snapshotName is the VolumeSnapshot name of backup id of chain
// NAMESPACE/NAME (a DNS-1123 subdomain):
//
//   - NAME-ID in lower case when the id has the default shape
//     (20261129T101500Z-3f9a0c17) and NAME is already lower case with no
//     byte a name cannot hold: the id's shape tells where NAME ends and
//     which letters were upper case, so the pair decodes back (and the
//     name is the one older versions gave);
//   - else a readable prefix of NAME-ID, '-' and a hash of CHAIN@ID
//     ("db_0" and "db-0", "Nightly" and "nightly" differ).
//
// A plain name ends in 'z' or in 'z' and '-' and 8 hex digits; a hashed
// one in 20 hex digits, so never in either. Distinct chains of one
// namespace are distinct NAMEs; chains of other namespaces land in theirs
// (when --namespace-map merges namespaces, pairsFor refuses what clashes).
func snapshotName(chain, id string) string {
	_, name, _ := strings.Cut(chain, "/")
	plain := name + "-" + strings.ToLower(id)
	if defaultBackupID.MatchString(id) && strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789.-") == "" &&
		len(validation.IsDNS1123Subdomain(plain)) == 0 {
		return plain
	}
	return hashedName(name+"-"+id, chain+"@"+id, validation.DNS1123SubdomainMaxLength)
}

// scheduledName is the VolumeSnapshot name of claim pvc taken at t:
// PVC-YYYYMMDDHHMMSS (UTC) when that fits 253 bytes, which a claim's name
// (a DNS-1123 subdomain) and the fixed-width time make decodable; else a
// prefix of it, '-' and a hash of the claim and time. A plain name ends in
// '-' and 14 digits, a hashed one in 20 hex digits with no '-' among them.
func scheduledName(pvc string, t time.Time) string {
	ts := t.UTC().Format("20060102150405")
	plain := pvc + "-" + ts
	if len(validation.IsDNS1123Subdomain(pvc)) == 0 && len(validation.IsDNS1123Subdomain(plain)) == 0 {
		return plain
	}
	return hashedName(plain, pvc+"@"+ts, validation.DNS1123SubdomainMaxLength)
}

// claimLabel is the pvcLabel value of claim pvc: the name itself when it is
// a valid label value (at most 63 bytes: every claim older versions could
// label), else a prefix, '-' and a hash of the name. A hashed value may
// equal another claim's name, so the label only narrows the listing:
// pruning also compares each snapshot's source claim (snapshotClaim).
func claimLabel(pvc string) string {
	if len(validation.IsValidLabelValue(pvc)) == 0 {
		return pvc
	}
	return hashedName(pvc, pvc, validation.LabelValueMaxLength)
}

// hashedName is the readable part of shown (lower case, every run of other
// bytes one '-', trimmed; "x" when nothing is left), cut so that the whole
// fits max bytes, then '-' and nameHashLen hex digits of the SHA-256 of
// exact. The result is a DNS-1123 label's bytes (lower-case letters, digits
// and inner '-'), so a valid subdomain, label and label value alike.
func hashedName(shown, exact string, max int) string {
	p := strings.Trim(notAlnum.ReplaceAllString(strings.ToLower(shown), "-"), "-")
	if p == "" {
		p = "x"
	}
	if n := max - 1 - nameHashLen; len(p) > n {
		p = strings.TrimRight(p[:n], "-")
	}
	sum := sha256.Sum256([]byte(exact))
	return p + "-" + hex.EncodeToString(sum[:])[:nameHashLen]
}
