package main

import (
	"time"

	"github.com/spf13/pflag"
)

// transferFlags are the options "backup create" and "restore" share: how
// many blocks the engine handles at once and how often a progress line is
// logged.
type transferFlags struct {
	workers  int
	interval time.Duration
}

// add registers --workers and --progress-interval; work says what a
// worker does to a block ("processed", "fetched") in --workers' help.
func (t *transferFlags) add(fl *pflag.FlagSet, work string) {
	fl.IntVar(&t.workers, "workers", 0, "blocks "+work+" in parallel (default 8)")
	fl.DurationVar(&t.interval, "progress-interval", 5*time.Second, "interval of progress lines when stderr is not a terminal")
}
