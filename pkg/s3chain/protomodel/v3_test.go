package protomodel

import (
	"strings"
	"testing"
)

// TestV3Safe explores every schedule of every v3 scope and fails, with the
// trace, on any state where a backup reported ready would not restore.
func TestV3Safe(t *testing.T) { mustBeSafe(t, V3Scopes(long)) }

// mustBeSafe explores every schedule of each scope, each a subtest, and
// fails on a violation (with its trace) or a search that hit the limit.
func mustBeSafe(t *testing.T, scopes []Scope) {
	for _, sc := range scopes {
		t.Run(sc.Name, func(t *testing.T) {
			r := Check(sc, nil, 0)
			logResult(t, r)
			if v := r.Violation; v != nil {
				t.Fatalf("%s: %s:\n  %s", v.Kind, v.Detail, strings.Join(v.Trace, "\n  "))
			}
			if !r.Complete {
				t.Fatalf("search stopped at the state limit: the scope is too big to be exhaustive")
			}
		})
	}
}

// TestV3MutantsFail shows that the v3 search has teeth: each deliberate
// break of the protocol is found in the lockless scope.
func TestV3MutantsFail(t *testing.T) {
	for _, m := range []struct {
		name string
		m    Mutant
	}{{"no-second-manifest-read", NoSecondRead}, {"confirm-ignores-dooms", IgnoreDooms}, {"undoom-after-failed-delete", UndoomAfterErr}} {
		t.Run(m.name, func(t *testing.T) { mustFind(t, LocklessScope(m.m, false), nil) })
	}
}
