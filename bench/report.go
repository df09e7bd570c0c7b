package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// printTable prints the run's context, the per-round incrementals and the
// summary table with ratios and targets.
func printTable(w io.Writer, r *Results) {
	m := r.Machine
	quiet := "a quiet run"
	if !m.Quiet {
		quiet = fmt.Sprintf("NOT a quiet run (a load average before is above %.1f)", quietLoad)
	}
	fmt.Fprintf(w, "chainvol bench %s: %d cores (%s), %.0f GiB RAM, kernel %s; load before %s, after %s: %s; %s; took %.0fs\n",
		r.StartedAt, m.Cores, m.CPU, m.MemoryBytes.Value/(1<<30), m.Kernel, m.LoadBefore, m.LoadAfter, quiet, m.Restic, r.Elapsed.Value)
	if fw := r.Workload.Fill; fw.Files > 0 {
		fmt.Fprintf(w, "volume %s ext4, %d files, %.0f MiB (large %.0f, compressed %.0f, text %.0f, small %.0f MiB in %d files); %d rounds of ~%.0f%% changes\n\n",
			bytesStr(int64(r.Config.VolumeSize.Value)), fw.Files, float64(fw.Bytes)/mib, float64(fw.LargeBytes)/mib,
			float64(fw.CompressedBytes)/mib, float64(fw.TextBytes)/mib, float64(fw.Small)/mib, fw.SmallFiles, r.Config.Rounds, r.Config.ChangeFraction*100)
	}

	if len(r.Incremental) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "round\tchanged MiB\tchainvol s\tchainvol up MiB\trestic s\trestic up MiB\tchainvol/restic\tchainvol incr/full\t")
		for _, in := range r.Incremental {
			fmt.Fprintf(tw, "%d\t%.1f\t%.2f\t%.1f\t%.1f\t%.1f\t%.3f\t%.3f\t\n", in.Round, in.ChangedBytes.Value/mib,
				in.Chainvol.Time.Value, in.Chainvol.Uploaded.Value/mib, in.Restic.Time.Value, in.Restic.Uploaded.Value/mib,
				in.Chainvol.Time.Value/in.Restic.Time.Value, in.ChainvolVsFull.Value)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "line\tunit\tchainvol\trestic\tlimit\tc/restic\tc/limit\ttarget\tmet")
	for _, l := range r.Lines {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.Name, l.Unit, num(&l.Chainvol), num(l.Restic), num(l.Limit),
			num(l.VsRestic), num(l.VsLimit), l.Target, met(l.Met))
	}
	tw.Flush()
}

func num(x *float64) string {
	switch {
	case x == nil:
		return "-"
	case *x >= 100:
		return fmt.Sprintf("%.0f", *x)
	case *x >= 10:
		return fmt.Sprintf("%.1f", *x)
	default:
		return fmt.Sprintf("%.3g", *x)
	}
}

func met(b *bool) string {
	switch {
	case b == nil:
		return ""
	case *b:
		return "yes"
	default:
		return "MISS"
	}
}
