package driver

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/volume"
)

func TestRestoreRefTemplates(t *testing.T) {
	vr := volumeRequest{params: volumeParams{FromBackup: "offsite:${pvc.namespace}/${pvc.name}@latest",
		PVCNamespace: "shop", PVCName: "data-db-1"}}
	r, err := restoreRef(vr)
	if err != nil || r.String() != "offsite:shop/data-db-1@latest" {
		t.Fatalf("ref %v, %v", r, err)
	}
	vr.params.PVCName = ""
	if _, err := restoreRef(vr); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("template without metadata: %v, want InvalidArgument", err)
	}
	vr = volumeRequest{params: volumeParams{FromBackup: "a:c@latest", BackupTarget: "b"}}
	if _, err := restoreRef(vr); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("conflicting targets: %v", err)
	}
	vr = volumeRequest{params: volumeParams{FromBackup: "c@latest", BackupTarget: "b"}}
	if r, err := restoreRef(vr); err != nil || r.Target != "b" {
		t.Fatalf("backupTarget default: %v %v", r, err)
	}
}

// TestChainName: chain names are an injective function of the PVC
// (NAMESPACE/NAME) or of the CSI volume name (issue 12, item 5). The
// examples of the issue used to share a chain ("team-a-db", a 100-byte
// truncation); each now has its own, and the exact names are the rule of
// chainName's docstring.
func TestChainName(t *testing.T) {
	vees := strings.Repeat("v", 100)
	sha := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	pvc := func(ns, n string) map[string]string { return volume.Record{PVCNamespace: ns, PVCName: n}.Encode() }
	tcs := []struct {
		lv   backend.LVol
		want string
	}{
		{backend.LVol{Name: "pvc-1", Labels: pvc("shop", "db")}, "shop/db"},
		{backend.LVol{Name: "pvc-2", Labels: pvc("team-a", "db")}, "team-a/db"},
		{backend.LVol{Name: "team-a/db"}, "_volume/team-a_2fdb"},
		{backend.LVol{Name: "team-a:db"}, "_volume/team-a_3adb"},
		{backend.LVol{Name: "team-a-db"}, "_volume/team-a-db"},
		{backend.LVol{Name: "team-a_2fdb"}, "_volume/team-a_5f2fdb"},
		{backend.LVol{Name: "pvc-1"}, "_volume/pvc-1"},
		{backend.LVol{Name: "a name/with ../odd bytes"}, "_volume/a_20name_2fwith_20_2e_2e_2fodd_20bytes"},
		{backend.LVol{Name: "///"}, "_volume/_2f_2f_2f"},
		{backend.LVol{Name: vees + "-alpha"}, "_volume-sha256/" + sha(vees+"-alpha")},
		{backend.LVol{Name: vees + "-beta"}, "_volume-sha256/" + sha(vees+"-beta")},
		// 92 bytes escaped: the longest name that is not hashed.
		{backend.LVol{Name: strings.Repeat("w", 92)}, "_volume/" + strings.Repeat("w", 92)},
		{backend.LVol{Name: strings.Repeat("w", 93)}, "_volume-sha256/" + sha(strings.Repeat("w", 93))},
		// Metadata that cannot be a PVC's falls back to the volume name.
		{backend.LVol{Name: "pvc-3", Labels: pvc("_volume", "x")}, "_volume/pvc-3"},
		{backend.LVol{Name: "pvc-4", Labels: pvc("Team", "x")}, "_volume/pvc-4"},
		{backend.LVol{Name: "pvc-5", Labels: pvc("shop", "")}, "_volume/pvc-5"},
		{backend.LVol{Name: "pvc-6", Labels: pvc(strings.Repeat("n", 63), strings.Repeat("p", 37))}, "_volume/pvc-6"},
	}
	seen := map[string]string{}
	for _, tc := range tcs {
		got := volume.ChainOf(tc.lv)
		if got != tc.want {
			t.Errorf("volume.ChainOf(%q, %v) = %q, want %q", tc.lv.Name, tc.lv.Labels, got, tc.want)
		}
		if err := s3chain.ValidChainName(got); err != nil {
			t.Errorf("volume.ChainOf(%q) = %q: %v", tc.lv.Name, got, err)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("volumes %q and %q share chain %q", other, tc.lv.Name, got)
		}
		seen[got] = tc.lv.Name
	}
}

// TestChainNameInjective: random volume names over the bytes the escape
// touches ('_', '/', ':', '.', ' ', case) and random claims, short and
// past the hashing length, give valid chains that no two volumes of
// distinct claims (or, without a claim, of distinct names) share.
func TestChainNameInjective(t *testing.T) {
	const bytes = "aA-_/:. 2f"
	r := rand.New(rand.NewPCG(24, 6))
	seg := func(n int) string {
		b := make([]byte, 1+r.IntN(n))
		for i := range b {
			b[i] = bytes[r.IntN(len(bytes))]
		}
		return string(b)
	}
	seen, claims := map[string]string{}, 0
	for i := range 30000 {
		lv := backend.LVol{Name: seg(110)}
		if i%2 == 0 {
			ns := strings.Trim(strings.ToLower(strings.NewReplacer("_", "", "/", "", ":", "", ".", "", " ", "").Replace(seg(10))), "-")
			lv.Labels = volume.Record{PVCNamespace: ns, PVCName: strings.NewReplacer(" ", "-", ":", ".", "/", "_").Replace(seg(60))}.Encode()
		}
		c := volume.ChainOf(lv)
		if err := s3chain.ValidChainName(c); err != nil {
			t.Fatalf("volume.ChainOf(%q) = %q: %v", lv.Name, c, err)
		}
		key := "volume " + lv.Name
		if rec := volume.Of(lv); !strings.HasPrefix(c, "_volume") {
			key, claims = "claim "+rec.PVCNamespace+"/"+rec.PVCName, claims+1
		}
		if o, ok := seen[c]; ok && o != key {
			t.Fatalf("%s and %s share chain %q", o, key, c)
		}
		seen[c] = key
	}
	if claims < 1000 {
		t.Fatalf("only %d claim chains generated", claims)
	}
}
