package populator

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/pkg/backupid"
)

// statefulSource is the one templated source of a StatefulSet's claims.
var statefulSource = BackupSourceSpec{Chain: "${pvc.namespace}/${pvc.name}", Backup: "before:2026-11-29T10:15:00Z"}

// TestRefForMembers: each claim of a StatefulSet maps to its own chain,
// ordinals >= 10 included (data-db-1 never gets data-db-10's), names with
// dots kept as they are.
func TestRefForMembers(t *testing.T) {
	seen := map[string]string{}
	for i := range 13 {
		claim := fmt.Sprintf("data.v2-db.prod-%d", i)
		r, err := RefFor(statefulSource, "shop", claim, "offsite")
		if err != nil {
			t.Fatal(err)
		}
		want := backupid.Ref{Target: "offsite", Chain: "shop/" + claim, Backup: "before:2026-11-29T10:15:00Z"}
		if r != want {
			t.Fatalf("claim %s: %+v, want %+v", claim, r, want)
		}
		if other, ok := seen[r.Chain]; ok {
			t.Fatalf("claims %s and %s share chain %s", other, claim, r.Chain)
		}
		seen[r.Chain] = claim
		if got, ok := Ordinal(claim); !ok || got != i {
			t.Fatalf("Ordinal(%q) = %d, %v", claim, got, ok)
		}
	}
}

// TestRefForSharesFromBackupsParser: RefFor is exactly fromBackup's
// reading (backupid.FillTemplate, then backupid.ParseRef), target
// defaulted only when none is named; its errors wrap ErrBadRef.
func TestRefForSharesFromBackupsParser(t *testing.T) {
	for _, spec := range []BackupSourceSpec{
		{Target: "s3", Chain: "${pvc.namespace}/${pvc.name}", Backup: "latest"},
		{Chain: "shop/${pvc.name}", Backup: "group:g-20261129"},
		{Chain: "fixed/chain", Backup: "20261129T101500Z"},
		{Chain: "${pvc.name}", Backup: "before:2026-11-29T11:15:00+01:00"},
	} {
		got, err := RefFor(spec, "shop", "data-db-0", "default")
		raw := backupid.FillTemplate(spec.Chain, "shop", "data-db-0") + "@" + spec.Backup
		if spec.Target != "" {
			raw = spec.Target + ":" + raw
		}
		want, werr := backupid.ParseRef(raw)
		if want.Target == "" {
			want.Target = "default"
		}
		if err != nil || werr != nil || got != want {
			t.Fatalf("RefFor(%+v) = %+v, %v; ParseRef(%q) = %+v, %v", spec, got, err, raw, want, werr)
		}
		if h, err := backupid.ParseSource(Handle(got)); err != nil || h != got {
			t.Fatalf("handle %q parses to %+v, %v", Handle(got), h, err)
		}
	}
	for _, spec := range []BackupSourceSpec{
		{Chain: "${pvc.namespace}/${pvc.name}", Backup: "before:yesterday"},
		{Chain: "a@b", Backup: "latest"},
		{Chain: "${pvc.name}", Backup: "group:"},
		{Target: "Bad_Target", Chain: "x", Backup: "latest"},
		{Chain: "../x", Backup: "latest"},
	} {
		if _, err := RefFor(spec, "shop", "data-db-0", "default"); !errors.Is(err, backupid.ErrBadRef) || !strings.Contains(err.Error(), "shop/data-db-0") {
			t.Errorf("RefFor(%+v) = %v; want ErrBadRef naming the claim", spec, err)
		}
	}
}

// TestRefForLongNames: a claim name that makes the chain longer than a
// chain may be is refused with the limit named, never cut short (a cut
// name could be another member's chain); the longest that fits is taken,
// and its handle, hashed past 128 bytes, still parses.
func TestRefForLongNames(t *testing.T) {
	ns := strings.Repeat("n", 63)
	fits := strings.Repeat("p", backupid.MaxChainLen-len(ns)-1)
	r, err := RefFor(statefulSource, ns, fits, "offsite")
	if err != nil || len(r.Chain) != backupid.MaxChainLen {
		t.Fatalf("%d-byte chain: %+v, %v", backupid.MaxChainLen, r, err)
	}
	h := Handle(r)
	if len(h) > backupid.MaxLen {
		t.Fatalf("handle %q: %d bytes", h, len(h))
	}
	if got, err := backupid.ParseSource(h); err != nil || got.Backup != r.Backup || !backupid.Hashes(got.Chain, r.Chain) {
		t.Fatalf("hashed handle %q: %+v, %v", h, got, err)
	}
	_, err = RefFor(statefulSource, ns, fits+"-0", "offsite")
	if !errors.Is(err, backupid.ErrBadRef) || !strings.Contains(err.Error(), fmt.Sprint(backupid.MaxChainLen)) {
		t.Fatalf("too long: %v", err)
	}
}

func TestOrdinal(t *testing.T) {
	for name, want := range map[string]int{"data-db-0": 0, "data-db-10": 10, "data-db-123": 123, "a.b-7": 7} {
		if got, ok := Ordinal(name); !ok || got != want {
			t.Errorf("Ordinal(%q) = %d, %v; want %d", name, got, ok, want)
		}
	}
	for _, name := range []string{"data", "data-db-01", "data-db-", "-3x"} {
		if i, ok := Ordinal(name); ok {
			t.Errorf("Ordinal(%q) = %d; want none", name, i)
		}
	}
	if member("data-db-12") != "claim data-db-12 (member 12)" || member("data") != "claim data" {
		t.Fatal(member("data-db-12"))
	}
}
