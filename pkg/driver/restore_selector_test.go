package driver

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestRestoreRefSelectors: the PVC templates fill in around before: and
// group: selectors (the ':' of the time and of the target do not clash),
// and a malformed time is InvalidArgument naming the RFC 3339 form.
func TestRestoreRefSelectors(t *testing.T) {
	for raw, want := range map[string]string{
		"offsite:${pvc.namespace}/${pvc.name}@before:2026-11-29T11:15:00+01:00": "offsite:shop/data-db-1@before:2026-11-29T11:15:00+01:00",
		"${pvc.namespace}/${pvc.name}@before:2026-11-29T10:15:00Z":              "offsite:shop/data-db-1@before:2026-11-29T10:15:00Z",
		"${pvc.namespace}/${pvc.name}@group:g-20261129T101500Z":                 "offsite:shop/data-db-1@group:g-20261129T101500Z",
	} {
		vr := volumeRequest{params: volumeParams{FromBackup: raw, BackupTarget: "offsite", PVCNamespace: "shop", PVCName: "data-db-1"}}
		r, err := restoreRef(vr)
		if err != nil || r.String() != want {
			t.Errorf("%s: %v, %v; want %s", raw, r, err, want)
		}
	}
	vr := volumeRequest{params: volumeParams{FromBackup: "${pvc.namespace}/${pvc.name}@before:yesterday", PVCNamespace: "shop", PVCName: "x"}}
	if _, err := restoreRef(vr); status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "RFC 3339") {
		t.Errorf("bad time: %v", err)
	}
}
