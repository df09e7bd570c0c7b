package main

import (
	"github.com/spf13/pflag"

	"github.com/chainvol/chainvol/pkg/retention"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// policyFlags are the --keep-* flags of a retention policy (pkg/retention),
// shared by "backup forget" and "k8s snapshot".
type policyFlags struct {
	p      retention.Policy
	within string
}

func addPolicyFlags(fl *pflag.FlagSet, f *policyFlags) {
	fl.IntVar(&f.p.Last, "keep-last", 0, "keep the newest N backups")
	fl.IntVar(&f.p.Hourly, "keep-hourly", 0, "keep the newest backup of each of the last N hours that have one (UTC; -1: every hour)")
	fl.IntVar(&f.p.Daily, "keep-daily", 0, "keep the newest backup of each of the last N days that have one (UTC; -1: every day)")
	fl.IntVar(&f.p.Weekly, "keep-weekly", 0, "keep the newest backup of each of the last N ISO weeks that have one (UTC; -1: every week)")
	fl.IntVar(&f.p.Monthly, "keep-monthly", 0, "keep the newest backup of each of the last N months that have one (UTC; -1: every month)")
	fl.IntVar(&f.p.Yearly, "keep-yearly", 0, "keep the newest backup of each of the last N years that have one (UTC; -1: every year)")
	fl.StringVar(&f.within, "keep-within", "", "keep every backup within this period of the newest one, e.g. 48h or 7d")
}

// changed reports whether any --keep-* flag was given.
func (f *policyFlags) changed(fl *pflag.FlagSet) bool {
	for _, n := range []string{"keep-last", "keep-hourly", "keep-daily", "keep-weekly", "keep-monthly", "keep-yearly", "keep-within"} {
		if fl.Changed(n) {
			return true
		}
	}
	return false
}

// policy returns the policy the flags give. Errors (usage): a count below
// -1, an unparsable --keep-within.
func (f *policyFlags) policy() (retention.Policy, error) {
	p := f.p
	if f.within != "" {
		d, err := store.ParseRetainPeriod(f.within)
		if err != nil {
			return p, usagef("--keep-within %q: want a positive period such as 48h or 7d", f.within)
		}
		p.Within = d
	}
	if err := p.Check(); err != nil {
		return p, usagef("--%v", err)
	}
	return p, nil
}
