package main

import (
	"os"
	"testing"
)

// TestShownHost: the printed URL never holds an unspecified address.
func TestShownHost(t *testing.T) {
	me, _ := os.Hostname()
	for host, want := range map[string]string{"": me, "0.0.0.0": me, "::": me, "127.0.0.1": "127.0.0.1", "backup.example": "backup.example", "::1": "::1"} {
		if got := shownHost(host); got != want {
			t.Errorf("shownHost(%q) = %q, want %q", host, got, want)
		}
	}
}
