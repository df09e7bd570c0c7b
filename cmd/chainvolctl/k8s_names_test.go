package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

// reviewPairs are the backups the review of issue 24 found sharing one
// VolumeSnapshot name: separators folded, case folded, and the '-' that
// joins NAME and ID.
var reviewPairs = [][2][2]string{
	{{"shop/db_0", "20261129T101500Z"}, {"shop/db-0", "20261129T101500Z"}},
	{{"shop/db", "Nightly"}, {"shop/db", "nightly"}},
	{{"shop/a", "b-c"}, {"shop/a-b", "c"}},
}

// TestSnapshotNameReviewPairs: each pair of the review gets two names,
// and a default id of a lower-case claim keeps the name older versions gave.
func TestSnapshotNameReviewPairs(t *testing.T) {
	for _, p := range reviewPairs {
		a, b := snapshotName(p[0][0], p[0][1]), snapshotName(p[1][0], p[1][1])
		if a == b {
			t.Errorf("%v and %v share the name %q", p[0], p[1], a)
		}
	}
	if n := snapshotName("shop/data-db-0", "20261129T101500Z-3f9a0c17"); n != "data-db-0-20261129t101500z-3f9a0c17" {
		t.Errorf("default id: %q, want the unhashed data-db-0-20261129t101500z-3f9a0c17", n)
	}
	if n := snapshotName("shop/db_0", "20261129T101500Z"); !strings.HasPrefix(n, "db-0-20261129t101500z-") || len(n) != len("db-0-20261129t101500z-")+nameHashLen {
		t.Errorf("hashed name %q, want db-0-20261129t101500z-HASH", n)
	}
}

// folded are the bytes the readable forms fold (case, separators) and the
// pieces of a default backup id, to make near-misses likely.
const folded = "aAzZtT019fF._-"

// randomSegment is 1..n bytes drawn mostly from folded, sometimes a
// default id's pieces, so that collisions would show.
func randomSegment(r *rand.Rand, n int) string {
	var b strings.Builder
	for l := 1 + r.IntN(n); b.Len() < l; {
		switch r.IntN(8) {
		case 0:
			b.WriteString(flipCase(r, "20261129T101500Z"))
		case 1:
			b.WriteString("-3f9a0c17")
		default:
			b.WriteByte(folded[r.IntN(len(folded))])
		}
	}
	return b.String()
}

// flipCase upper- or lower-cases each letter of s at random.
func flipCase(r *rand.Rand, s string) string {
	b := []byte(s)
	for i, c := range b {
		if r.IntN(2) == 0 {
			b[i] = strings.ToUpper(string(c))[0]
		} else {
			b[i] = strings.ToLower(string(c))[0]
		}
	}
	return string(b)
}

// adversarialIDs are ids that fold into one another or into a default id.
var adversarialIDs = []string{"20261129T101500Z", "20261129t101500z", "20261129T101500z", "20261129T101500Z-3f9a0c17",
	"20261129T101500Z-3F9A0C17", "20261129t101500z-3f9a0c17", "3f9a0c17", "Nightly", "nightly", "NIGHTLY", "b-c", "c", "b_c", "b.c", "z"}

// adversarialNames are chain names that fold into one another.
var adversarialNames = []string{"db_0", "db-0", "db.0", "DB-0", "db--0", "db__0", "db-0.", "db..0", "a", "a-b", "a_b", "A",
	"x-20261129t101500z", "x-20261129T101500Z", "x", "db-0-20261129t101500z", "0", "-", "_", "."}

// injective records name -> input and fails on a second input of a name.
type injective struct {
	t    *testing.T
	what string
	seen map[string]string
}

func (c *injective) add(name, input string, valid []string) {
	c.t.Helper()
	if len(valid) > 0 {
		c.t.Fatalf("%s(%s) = %q is not valid: %v", c.what, input, name, valid)
	}
	if other, ok := c.seen[name]; ok && other != input {
		c.t.Fatalf("%s: %s and %s share %q", c.what, other, input, name)
	}
	c.seen[name] = input
}

// TestSnapshotNameInjective: every pair of adversarial names, ids and
// namespaces, and thousands of random ones, give valid names (DNS-1123
// subdomains) that no two backups share within a namespace.
func TestSnapshotNameInjective(t *testing.T) {
	c := &injective{t: t, what: "snapshotName", seen: map[string]string{}}
	add := func(chain, id string) {
		if s3chain.ValidChainName(chain) != nil || s3chain.ValidBackupID(id) != nil {
			return
		}
		ns, _, _ := strings.Cut(chain, "/")
		n := snapshotName(chain, id)
		c.add(ns+"/"+n, chain+"@"+id, validation.IsDNS1123Subdomain(n))
	}
	for _, ns := range []string{"shop", "a"} {
		for _, n := range adversarialNames {
			for _, id := range adversarialIDs {
				add(ns+"/"+n, id)
			}
		}
	}
	r := rand.New(rand.NewPCG(24, 1))
	for range 30000 {
		add([]string{"shop", "a"}[r.IntN(2)]+"/"+randomSegment(r, 40), randomSegment(r, 30))
	}
	add("shop/"+strings.Repeat("Ab_", 33), strings.Repeat("Z", 64)) // the longest chain and id
	if len(c.seen) < 10000 {
		t.Fatalf("only %d valid inputs generated", len(c.seen))
	}
}

// TestScheduledNameInjective: claims (valid names, long ones, and names
// the API would refuse) at many times give valid, distinct names.
func TestScheduledNameInjective(t *testing.T) {
	c := &injective{t: t, what: "scheduledName", seen: map[string]string{}}
	r := rand.New(rand.NewPCG(24, 2))
	t0 := time.Date(2026, 11, 29, 10, 15, 0, 0, time.UTC)
	claims := []string{"data-db-0", "Data_DB-0", "data-db-0-20261129101500", "data-db", strings.Repeat("a", 238), strings.Repeat("a", 239),
		strings.Repeat("a", 253), strings.Repeat("a", 300), "a.b", "a..b", "-a"}
	for range 3000 {
		claims = append(claims, strings.ToLower(randomSegment(r, 260)))
	}
	for _, pvc := range claims {
		for _, d := range []time.Duration{0, time.Second, 99 * time.Hour, time.Duration(r.IntN(1e6)) * time.Second} {
			at := t0.Add(d)
			n := scheduledName(pvc, at)
			c.add(n, fmt.Sprintf("%s@%d", pvc, at.Unix()), validation.IsDNS1123Subdomain(n))
		}
	}
	if n := scheduledName(strings.Repeat("a", 250), t0); !strings.HasPrefix(n, strings.Repeat("a", 10)) {
		t.Errorf("a long claim's name %q lost its readable prefix", n)
	}
}

// TestClaimLabelInjective: claim names of every length give valid label
// values, distinct for distinct claims; names that fit are kept as they
// are (the labels older versions wrote).
func TestClaimLabelInjective(t *testing.T) {
	c := &injective{t: t, what: "claimLabel", seen: map[string]string{}}
	r := rand.New(rand.NewPCG(24, 3))
	for i := range 20000 {
		pvc := strings.ToLower(randomSegment(r, 120))
		if i%3 == 0 {
			pvc = strings.Repeat("a", 55+r.IntN(20)) + pvc[:min(len(pvc), 3)]
		}
		c.add(claimLabel(pvc), pvc, validation.IsValidLabelValue(claimLabel(pvc)))
	}
	if l := claimLabel("data-db-0"); l != "data-db-0" {
		t.Errorf("claimLabel(data-db-0) = %q, want it unchanged", l)
	}
}

// TestContentNameInjective: handles of distinct backups, including those
// the review's pairs had, give valid, distinct content names.
func TestContentNameInjective(t *testing.T) {
	c := &injective{t: t, what: "contentName", seen: map[string]string{}}
	r := rand.New(rand.NewPCG(24, 4))
	for _, p := range reviewPairs {
		for _, b := range p {
			h := "backup:s3:" + b[0] + "@" + b[1]
			c.add(contentName(h), h, validation.IsDNS1123Subdomain(contentName(h)))
		}
	}
	for range 20000 {
		h := "backup:s3:shop/" + randomSegment(r, 40) + "@" + randomSegment(r, 30)
		c.add(contentName(h), h, validation.IsDNS1123Subdomain(contentName(h)))
	}
}

// FuzzSnapshotName: two distinct valid backups of one namespace never
// share a name, and every name is a valid subdomain (seeded with the
// review's pairs; go test -fuzz FuzzSnapshotName searches further).
func FuzzSnapshotName(f *testing.F) {
	for _, p := range reviewPairs {
		f.Add(p[0][0], p[0][1], p[1][0], p[1][1])
	}
	f.Fuzz(func(t *testing.T, c1, id1, c2, id2 string) {
		for _, in := range [][2]string{{c1, id1}, {c2, id2}} {
			if s3chain.ValidChainName(in[0]) != nil || s3chain.ValidBackupID(in[1]) != nil || !strings.Contains(in[0], "/") {
				t.Skip()
			}
			if errs := validation.IsDNS1123Subdomain(snapshotName(in[0], in[1])); len(errs) > 0 {
				t.Fatalf("snapshotName%v invalid: %v", in, errs)
			}
		}
		ns1, _, _ := strings.Cut(c1, "/")
		ns2, _, _ := strings.Cut(c2, "/")
		if ns1 == ns2 && (c1 != c2 || id1 != id2) && snapshotName(c1, id1) == snapshotName(c2, id2) {
			t.Fatalf("%s@%s and %s@%s share %q", c1, id1, c2, id2, snapshotName(c1, id1))
		}
	})
}
