package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
)

// printJSON writes v as indented JSON: the -o json form of every listing
// and show command, stable for scripts.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes tab-separated rows aligned in columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cols ...string) { fmt.Fprintln(t.tw, strings.Join(cols, "\t")) }

func (t *table) flush() error { return t.tw.Flush() }

// emit prints v as JSON with -o json, else calls tableFn.
func (a *app) emit(cmd *cobra.Command, v any, tableFn func(io.Writer) error) error {
	if a.output == "json" {
		return printJSON(cmd.OutOrStdout(), v)
	}
	return tableFn(cmd.OutOrStdout())
}

// bytesStr formats a byte count for people (IEC units).
func bytesStr(n int64) string { return humanize.IBytes(uint64(max(n, 0))) }

// timeStr formats a time for tables, in UTC like backup ids.
func timeStr(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// orDash shows "-" for an empty field so columns stay aligned.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
