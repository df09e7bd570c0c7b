package backupid

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	long := strings.Repeat("n", 63) + "/" + strings.Repeat("p", 36)
	for _, r := range []Ref{
		{Target: "offsite", Chain: "shop/data-db-0", Backup: "20261129T101500Z"},
		{Target: "a-very-long-name", Chain: long, Backup: "20261129T101500Z-12"},
	} {
		id := Format(r)
		if len(id) > MaxLen || !Is(id) {
			t.Fatalf("id %q: %d bytes", id, len(id))
		}
		got, err := Parse(id)
		if err != nil || got.Target != r.Target || got.Backup != r.Backup || !Hashes(got.Chain, r.Chain) {
			t.Fatalf("Parse(%q) = %+v, %v", id, got, err)
		}
	}
	if Format(Ref{Target: "t", Chain: "a/b", Backup: "x"}) != "backup:t:a/b@x" {
		t.Fatal("short ids must stay readable")
	}
}

func TestParseRefuses(t *testing.T) {
	for _, id := range []string{
		"backup:../../etc",
		"backup:shop/db@1", // no target
		"backup:t:shop/db@before:2026-11-29T10:00:00Z", // a selector is not one backup
		"backup:t:shop/db@group:g1",
		"backup:t:~0123@before:2026-11-29T10:00:00Z",
		"backup:BAD:~0123@x",
		"snap-1",
	} {
		if r, err := Parse(id); !errors.Is(err, ErrBadRef) {
			t.Errorf("Parse(%q) = %+v, %v; want ErrBadRef", id, r, err)
		}
	}
}

// TestFormatInjective: random valid targets, chains (short, and long
// enough to be hashed) and backup ids give distinct ids of at most MaxLen
// bytes that parse back to their own reference.
func TestFormatInjective(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 8))
	pick := func(alpha string, n int) string {
		b := make([]byte, 1+r.IntN(n))
		for i := range b {
			b[i] = alpha[r.IntN(len(alpha))]
		}
		return string(b)
	}
	seen := map[string]Ref{}
	for range 30000 {
		ref := Ref{Target: pick("a0-", 3), Chain: pick("aA_-./", 100), Backup: pick("aA0_-.", 64)}
		if CheckChain(ref.Chain) != nil || CheckBackupID(ref.Backup) != nil || strings.Trim(ref.Target, "-") != ref.Target {
			continue
		}
		id := Format(ref)
		if o, ok := seen[id]; ok && o != ref {
			t.Fatalf("%+v and %+v share id %q", o, ref, id)
		}
		seen[id] = ref
		got, err := Parse(id)
		if len(id) > MaxLen || err != nil || got.Target != ref.Target || got.Backup != ref.Backup || !Hashes(got.Chain, ref.Chain) {
			t.Fatalf("Format(%+v) = %q (%d bytes), parses to %+v, %v", ref, id, len(id), got, err)
		}
	}
	if len(seen) < 1000 {
		t.Fatalf("only %d valid references generated", len(seen))
	}
}

// TestParseSource: a restore source takes the selectors Parse refuses,
// hashed chains included, and refuses what Parse refuses otherwise.
func TestParseSource(t *testing.T) {
	for id, want := range map[string]Ref{
		"backup:t:shop/db@before:2026-11-29T10:00:00Z": {Target: "t", Chain: "shop/db", Backup: "before:2026-11-29T10:00:00Z"},
		"backup:t:shop/db@group:g1":                    {Target: "t", Chain: "shop/db", Backup: "group:g1"},
		"backup:t:~0123@before:2026-11-29T10:00:00Z":   {Target: "t", Chain: "~0123", Backup: "before:2026-11-29T10:00:00Z"},
		"backup:t:shop/db@latest":                      {Target: "t", Chain: "shop/db", Backup: "latest"},
	} {
		if got, err := ParseSource(id); err != nil || got != want {
			t.Errorf("ParseSource(%q) = %+v, %v; want %+v", id, got, err, want)
		}
	}
	for _, id := range []string{"backup:shop/db@group:g1", "backup:t:shop/db@before:yesterday", "backup:BAD:~0123@x", "snap-1"} {
		if r, err := ParseSource(id); !errors.Is(err, ErrBadRef) {
			t.Errorf("ParseSource(%q) = %+v, %v; want ErrBadRef", id, r, err)
		}
	}
}

// TestFillTemplate: both templates, every occurrence, and nothing else.
func TestFillTemplate(t *testing.T) {
	got := FillTemplate("offsite:${pvc.namespace}/${pvc.name}@before:2026-11-29T10:00:00Z", "shop", "data-db-10")
	if got != "offsite:shop/data-db-10@before:2026-11-29T10:00:00Z" || !HasTemplate("${pvc.name}") || HasTemplate("shop/db") {
		t.Fatalf("FillTemplate = %q", got)
	}
}
