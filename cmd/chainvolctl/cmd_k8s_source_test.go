package main

import (
	"strings"
	"testing"
)

// TestBackupSource: the flags give the object a claim names, the
// shortcuts become selectors, and what fromBackup's parser refuses is a
// usage error before anything is written.
func TestBackupSource(t *testing.T) {
	s, err := backupSource(sourceFlags{name: "db", namespace: "shop", chain: "${pvc.namespace}/${pvc.name}", backup: "latest", before: "2026-11-29T10:15:00Z"})
	if err != nil || s.Spec.Backup != "before:2026-11-29T10:15:00Z" || s.Kind != "BackupSource" || s.APIVersion != "chainvol.csi.io/v1alpha1" {
		t.Fatalf("%+v, %v", s, err)
	}
	if got := sourceRef(s); got != "shop/db: ${pvc.namespace}/${pvc.name}@before:2026-11-29T10:15:00Z" {
		t.Fatal(got)
	}
	for _, f := range []sourceFlags{
		{name: "db", namespace: "shop", chain: "x", backup: "before:yesterday"},
		{name: "db", namespace: "shop", chain: "x", before: "t", group: "g"},
		{name: "Bad_Name", namespace: "shop", chain: "x", backup: "latest"},
		{name: "db", namespace: "shop", chain: "x@y", backup: "latest"},
	} {
		if _, err := backupSource(f); err == nil || !strings.Contains(err.Error(), "") {
			t.Errorf("%+v accepted", f)
		} else if _, ok := err.(usageError); !ok {
			t.Errorf("%+v: %T %v, want a usage error", f, err, err)
		}
	}
}
