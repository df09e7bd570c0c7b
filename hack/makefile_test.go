// Package hack holds the helper scripts and programs of the Makefile; its
// tests check the Makefile itself.
package hack

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// phonyTargets returns the targets of the Makefile's .PHONY lines and every
// target with a rule (names of [a-z0-9-], as `make help` lists them).
func phonyTargets(t *testing.T) (phony, rules []string) {
	t.Helper()
	data, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	rule := regexp.MustCompile(`^([a-z0-9-]+):`)
	for _, l := range strings.Split(string(data), "\n") {
		if after, ok := strings.CutPrefix(l, ".PHONY:"); ok {
			phony = append(phony, strings.Fields(after)...)
		} else if m := rule.FindStringSubmatch(l); m != nil {
			rules = append(rules, m[1])
		}
	}
	return phony, rules
}

// TestMakeHelp: `make help` lists every target, documented, in one aligned
// column as wide as the longest name (issue 20: long names overflowed and
// `clean` was missing).
func TestMakeHelp(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is not installed") // the Makefile is the entry point; no skip
	}
	cmd := exec.Command("make", "--no-print-directory", "-s", "help")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make help: %v", err)
	}
	listed := map[string]int{} // name -> column of its description
	line := regexp.MustCompile(`^  ([a-z0-9-]+)( +)(\S.*)$`)
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("make help line %q is not '  NAME  what it does'", l)
			continue
		}
		listed[m[1]] = 2 + len(m[1]) + len(m[2])
	}
	phony, rules := phonyTargets(t)
	isPhony := map[string]bool{}
	longest := 0
	for _, p := range phony {
		isPhony[p] = true
		longest = max(longest, len(p))
		if _, ok := listed[p]; !ok {
			t.Errorf("target %s (.PHONY) is missing from make help", p)
		}
	}
	for _, r := range rules {
		if !isPhony[r] {
			t.Errorf("target %s has a rule but is not in .PHONY", r)
		}
	}
	for name, col := range listed {
		if want := 2 + longest + 2; col != want {
			t.Errorf("make help: the description of %s starts at column %d, want %d (longest name + 2)", name, col, want)
		}
	}
}

// TestClusterCostsAgree: the cold and warm times and the disk need of make
// e2e-cluster are stated once, measured, and the same in `make help`,
// README.md and test/cluster/README.md (issue 20 found three cold times).
func TestClusterCostsAgree(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^e2e-cluster:.*## .*cold ~(\d+) min, warm under (\d+) min; ~(\d+) GB free disk`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("the e2e-cluster help text does not say 'cold ~N min, warm under N min; ~N GB free disk'")
	}
	cold, warm, disk := string(m[1]), string(m[2]), string(m[3])
	for _, doc := range []string{"../README.md", "../test/cluster/README.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(b)), " ") // lines wrap anywhere
		for _, want := range []string{"about " + cold + " minutes", "under " + warm + " minutes", disk + " GB free"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s does not say %q, as make help does", doc, want)
			}
		}
		if regexp.MustCompile(`\b(13 minutes|745 s|~20 min|quarter of an hour)`).MatchString(text) {
			t.Errorf("%s still quotes an old time", doc)
		}
	}
}
