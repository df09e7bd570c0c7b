package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// options are the flags; the defaults are the recorded run (docs/BENCHMARKS.md).
type options struct {
	size       int64
	fill       float64
	rounds     int
	change     float64
	longChain  int
	runs       int
	resticRuns int
	snapSizes  []int64
	snapFill   float64
	snapRuns   int
	scaleData  int64
	blockSize  string
	// instantSizes are the backup sizes of the instant-restore phase;
	// instantData the bytes written to each (instant: phase_instant.go).
	instantSizes []int64
	instantData  int64
	// only names the phases to run (phaseNames); empty runs them all.
	only        map[string]bool
	seed        uint64
	out, tmpDir string
	// profileDir, when set, receives a CPU profile and a trace of the first
	// chainvolctl restore of each restore set (chainvolctl's
	// CHAINVOL_CPUPROFILE), to explain a missed line.
	profileDir string
}

func parseFlags() options {
	var o options
	var size, snaps, scale, instants, instantData, only string
	flag.StringVar(&size, "size", "4GiB", "volume size of the backup/restore workload")
	flag.Float64Var(&o.fill, "fill", 0.6, "fraction of the volume filled with files")
	flag.IntVar(&o.rounds, "rounds", 10, "rounds of changes, each followed by an incremental backup by both tools")
	flag.Float64Var(&o.change, "change", 0.01, "fraction of the data each round touches")
	flag.IntVar(&o.longChain, "long-chain", 31, "links of the long chain of the chain-length test (0 skips it)")
	flag.IntVar(&o.runs, "runs", 3, "repetitions of restores and limits; the median is reported")
	flag.IntVar(&o.resticRuns, "restic-runs", 0, "repetitions of restic restore; 0 means as many as -runs")
	flag.StringVar(&snaps, "snap-sizes", "1GiB,16GiB", "volume sizes of the snapshot/clone test")
	flag.Float64Var(&o.snapFill, "snap-fill", 0.25, "fraction of a snapshot-test volume written, as 1 MiB extents spread evenly")
	flag.IntVar(&o.snapRuns, "snap-runs", 5, "repetitions of each snapshot and clone")
	flag.StringVar(&scale, "scale-data", "1GiB", "data of the scale test: in a volume of that size and in one 64 times larger (0 skips it)")
	flag.StringVar(&o.blockSize, "block-size", "", "blockSize parameter of the backup VolumeSnapshotClass (\"\" = the driver's default)")
	flag.StringVar(&instants, "instant-sizes", "4GiB,32GiB", "backup sizes of the instant-restore phase (issue 27; 0 skips it)")
	flag.StringVar(&instantData, "instant-data", "512MiB", "data written to each instant-restore backup: a quarter in one file for the random reads, the rest spread over the volume")
	flag.StringVar(&only, "only", "", "run only these phases, comma-separated: "+strings.Join(phaseNames, ","))
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the generated data")
	flag.StringVar(&o.out, "out", "bench/results/latest.json", "JSON results file")
	flag.StringVar(&o.profileDir, "profile", "", "directory for a CPU profile (NAME.pprof) and an execution trace (NAME.trace) of the first chainvolctl restore of each set")
	flag.StringVar(&o.tmpDir, "tmp", "/var/tmp", "parent of the scratch directory (pool image, S3 data)")
	flag.Parse()
	var err error
	if o.resticRuns <= 0 {
		o.resticRuns = o.runs
	}
	if scale != "0" {
		if o.scaleData, err = parseSize(scale); err != nil {
			fatal(err)
		}
	}
	if o.size, err = parseSize(size); err != nil {
		fatal(err)
	}
	o.snapSizes = parseSizes(snaps)
	if instants != "0" {
		o.instantSizes = parseSizes(instants)
	}
	if o.instantData, err = parseSize(instantData); err != nil {
		fatal(err)
	}
	if o.only, err = parseOnly(only); err != nil {
		fatal(err)
	}
	return o
}

// parseSizes reads a comma-separated list of sizes (parseSize).
func parseSizes(list string) []int64 {
	var out []int64
	for _, s := range strings.Split(list, ",") {
		n, err := parseSize(s)
		if err != nil {
			fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// phaseNames are the phases of a run in their order, as -only names them.
var phaseNames = []string{"backups", "restores", "localbase", "chain", "scale", "snap", "instant"}

// parseOnly reads -only; restores, localbase and chain need the backups
// of the workload volume, so they bring that phase along.
func parseOnly(list string) (map[string]bool, error) {
	if list == "" {
		return nil, nil
	}
	only := map[string]bool{}
	for _, p := range strings.Split(list, ",") {
		if !slices.Contains(phaseNames, p) {
			return nil, fmt.Errorf("-only: no phase %q (phases: %s)", p, strings.Join(phaseNames, ","))
		}
		only[p] = true
		if p == "restores" || p == "localbase" || p == "chain" {
			only["backups"] = true
		}
	}
	return only, nil
}

// parseSize reads 4GiB, 512MiB, 1048576.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for suf, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40} {
		if strings.HasSuffix(s, suf) {
			s, mult = strings.TrimSuffix(s, suf), m
		}
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q (use e.g. 4GiB or 512MiB)", s)
	}
	return int64(n*float64(mult)) &^ 4095, nil
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "chainvol-bench:", err)
	os.Exit(1)
}

func main() {
	o := parseFlags()
	if os.Geteuid() != 0 {
		fatal(fmt.Errorf("needs root (loop devices, mkfs, mount): run 'sudo make bench'"))
	}
	root, err := repoRoot()
	if err != nil {
		fatal(err)
	}
	res, err := runBench(root, o)
	if res != nil && err == nil {
		out := o.out
		if !filepath.IsAbs(out) { // relative to the repository, where make runs it
			out = filepath.Join(root, out)
		}
		if werr := writeJSON(out, res); werr != nil {
			err = werr
		}
	}
	if err != nil {
		fatal(err)
	}
	printTable(os.Stdout, res)
}

// runBench sets up the world, runs every phase and tears it all down again,
// also when a phase fails or the run is interrupted.
func runBench(root string, o options) (*Results, error) {
	start := time.Now()
	res := &Results{Schema: 3, StartedAt: start.UTC().Format(time.RFC3339), Machine: machine(), Config: config(o)}
	poolSize := 8*o.size + 4*maxOf(o.snapSizes) + 66*o.scaleData + 4*maxOf(o.instantSizes) + 8<<30 // sparse
	e, err := newEnv(root, o.tmpDir, poolSize)
	if e != nil {
		defer e.teardown()
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		go func() { <-sig; logf("interrupted: cleaning up"); e.teardown(); os.Exit(130) }()
	}
	if err != nil {
		return nil, err
	}
	w, err := newWorld(e)
	if err != nil {
		return nil, err
	}
	res.Machine.Restic = w.restic.version
	if o.blockSize != "" {
		w.drv.snapParams = map[string]string{"blockSize": o.blockSize}
	}
	b := &bench{o: o, w: w, res: res, ctx: context.Background()}
	for _, phase := range []struct {
		key, name string
		fn        func() error
	}{
		{"backups", "backups", b.backups}, {"restores", "restores", b.restores}, {"localbase", "local-base restores", b.localBase},
		{"chain", "chain length", b.chainLength}, {"scale", "scale", b.scale}, {"snap", "snapshot and clone", b.snapClone},
		{"instant", "instant restore", b.instant},
	} {
		if o.only != nil && !o.only[phase.key] {
			continue
		}
		t := time.Now()
		logf("== %s", phase.name)
		if err := phase.fn(); err != nil {
			return nil, fmt.Errorf("%s: %w", phase.name, err)
		}
		logf("== %s done in %.0fs (total %.0fs)", phase.name, time.Since(t).Seconds(), time.Since(start).Seconds())
	}
	res.Machine.LoadAfter = loadavg()
	res.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	res.Elapsed = seconds(time.Since(start))
	res.Lines = lines(res)
	return res, nil
}

// world is what every phase talks to.
type world struct {
	e      *env
	s3     *s3
	drv    *driverProc // node a: backs the workload up, so holds its chain's newest local snapshot
	drvB   *driverProc // node b: restores from nothing (nodeB)
	restic *restic
	repo   *s3chain.Repo // read-only view of chainvol's bucket (manifests)
	creds  string
}

func newWorld(e *env) (*world, error) {
	w := &world{e: e, creds: filepath.Join(e.tmp, "s3.creds")}
	var err error
	if w.s3, err = startS3(e); err != nil {
		return nil, err
	}
	if err = w.s3.writeCredentials(w.creds); err != nil {
		return nil, err
	}
	if w.drv, err = startDriver(e, w.s3, w.creds, nodeID, filepath.Join(e.pool, "node-a")); err != nil {
		return nil, err
	}
	if w.drvB, err = startDriver(e, w.s3, w.creds, nodeB, filepath.Join(e.pool, "node-b")); err != nil {
		return nil, err
	}
	if w.restic, err = newRestic(e, w.s3); err != nil {
		return nil, err
	}
	store, err := store.Open(context.Background(), w.s3.chainvolURL(),
		store.Credentials{AccessKeyID: w.s3.access, SecretAccessKey: w.s3.secret})
	if err != nil {
		return nil, err
	}
	w.repo, err = s3chain.NewRepo(store, s3chain.RepoOptions{})
	return w, err
}

// bench carries the run's state between phases.
type bench struct {
	o   options
	w   *world
	res *Results
	ctx context.Context

	vol     string // the workload volume's CSI id
	mnt     string // where it is published
	gen     *gen
	ids     []string // chainvol backup ids, oldest first
	resticS []string // restic snapshot ids, oldest first
	buf     []byte   // the limit's write buffer
	// lastImage is the newest backup's snapshot image in the pool.
	lastImage string
	// profile is where the next chainvolctl restore writes its CPU
	// profile ("" = none; options.profileDir).
	profile string
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("run from inside the chainvol repository (no go.mod found)")
		}
		dir = filepath.Dir(dir)
	}
}

func writeJSON(path string, res *Results) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	logf("results written to %s", path)
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func config(o options) Config {
	c := Config{VolumeSize: bytesFig(o.size), FillFraction: o.fill, Rounds: o.rounds, ChangeFraction: o.change,
		LongChain: o.longChain, Runs: o.runs, ResticRuns: o.resticRuns, SnapFill: o.snapFill, SnapRuns: o.snapRuns, Seed: o.seed,
		ScaleData: bytesFig(o.scaleData), BlockSize: o.blockSize, InstantData: bytesFig(o.instantData)}
	for _, s := range o.instantSizes {
		c.InstantSizes = append(c.InstantSizes, bytesFig(s))
	}
	for _, p := range phaseNames {
		if o.only[p] {
			c.Only = append(c.Only, p)
		}
	}
	for _, s := range o.snapSizes {
		c.SnapSizes = append(c.SnapSizes, bytesFig(s))
	}
	return c
}

func maxOf(xs []int64) int64 {
	var m int64
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
