package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/config/hpa"
	"ebb.dev/ebb/pkg/manifest"
	"ebb.dev/ebb/pkg/scaling/whatif"
)

const whatifUsage = `usage: autoscaler whatif --invocations FILE --durations FILE [--memory FILE]
                         [-f MANIFEST]... [--cold-start DURATION] [--function HASH]...
                         [--limit N] [--output json|text|yaml]
                         [--arrivals even|random] [--seed N] [--start-cost DURATION]

Runs Ebb in a closed loop on the request arrivals of a trace in the Azure
Functions 2019 per-minute format, on a virtual clock: each function is one
revision, its requests arrive spread evenly over each minute (--arrivals
random: each at a random second of its minute, repeatable by --seed) and
run for the function's average duration, and the live decider, the
activator's reports and pokes and the autoscaler's stepping decide when
replicas start (ready a cold start later) and stop. Prints one line per
function and a summary (function "*"): requests, cold starts, waits,
replica-seconds, idle replica-seconds, replica starts and the cost of both
(idle replica-seconds plus --start-cost for each start) (docs/whatif.md):
as JSON lines (the default), a table (--output text) or one YAML document
(--output yaml: functions and summary, the JSON lines' fields).

-f takes a config-autoscaler ConfigMap and/or a Deployment, whose pod
template annotations apply to every function (without -f: Knative's
defaults, containerConcurrency 0).

Exit status: 0 on success, 1 when the manifests are invalid, 2 when a file
cannot be read or parsed, or a flag is wrong.

Flags:
`

type whatifOptions struct {
	invocations, durations, memory string
	manifests                      fileList
	coldStart                      time.Duration
	functions                      fileList
	limit                          int
	output                         string
	spread                         whatif.Spread
	seed                           uint64
	startCost                      time.Duration
	parkedWake                     time.Duration
	parkedCost                     float64 // -1: the revision's own
}

// defaultSeed is --seed's default.
const defaultSeed = 1

func parseWhatifFlags(args []string, errOut io.Writer) (whatifOptions, error) {
	var o whatifOptions
	fs := flag.NewFlagSet("whatif", flag.ContinueOnError)
	fs.SetOutput(errOut)
	finish := o.traceFlags(fs, whatif.SpreadEven)
	fs.StringVar(&o.memory, "memory", "", "the per-app memory CSV (optional; checked, not used)")
	fs.StringVar(&o.output, "output", "json", "output format: json (one line per function, then the summary), text or yaml")
	fs.StringVar(&o.output, "o", "json", "shorthand for --output")
	fs.Usage = func() { fmt.Fprint(errOut, whatifUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if err := finish(); err != nil {
		return o, err
	}
	return o, checkOutput(o.output, "json", "text", "yaml")
}

// traceFlags registers the flags whatif and tune share: the trace, the
// manifests, the cold start, the choice of functions, the spread of
// arrivals (spread by default) and the start cost. The function it
// returns checks them once fs is parsed.
func (o *whatifOptions) traceFlags(fs *flag.FlagSet, spread whatif.Spread) func() error {
	fs.StringVar(&o.invocations, "invocations", "", "the per-minute invocations CSV (required)")
	fs.StringVar(&o.durations, "durations", "", "the per-function durations CSV (required)")
	fs.Var(&o.manifests, "f", "a manifest: config-autoscaler ConfigMap and/or Deployment (repeatable; - for stdin)")
	fs.DurationVar(&o.coldStart, "cold-start", time.Second, "time from a replica's creation to its readiness")
	fs.Var(&o.functions, "function", "use only this HashFunction (repeatable)")
	fs.IntVar(&o.limit, "limit", 0, "use only the first N functions of the file (0: all)")
	spreadName := fs.String("arrivals", spread.String(), "where in its minute each invocation arrives: "+
		"even (spread evenly over it) or random (at a random second of it, repeatable by --seed)")
	fs.Uint64Var(&o.seed, "seed", defaultSeed, "the seed of --arrivals random (the same seed gives the same output)")
	startCost := fs.String("start-cost", "", "replica-seconds charged for each replica start in the cost (default: --cold-start)")
	fs.DurationVar(&o.parkedWake, "parked-wake", whatif.DefaultParkedWake,
		"with parking (autoscaling.ebb.dev/enable-parking): what the first request to a parked replica waits; set what you measured (make test-node)")
	parkedCost := fs.String("parked-cost", "", "with parking: a parked replica-second's cost as a fraction of an idle one's, in the cost and "+
		"for the learned policy's choice (default: the revision's parked-cost, 0.1 unless set)")
	return func() error {
		o.parkedCost = -1
		if *parkedCost != "" {
			f, err := strconv.ParseFloat(*parkedCost, 64)
			if err != nil || !(f > 0 && f <= 1) {
				return fmt.Errorf("--parked-cost %q: want a fraction within (0, 1], e.g. 0.1 (a parked replica-second costs a tenth of an idle one)",
					*parkedCost)
			}
			o.parkedCost = f
		}
		if o.parkedWake < 0 {
			return fmt.Errorf("--parked-wake %v: want a duration of at least 0, e.g. 20ms", o.parkedWake)
		}
		var err error
		if o.spread, err = whatif.ParseSpread(*spreadName); err != nil {
			return fmt.Errorf("--arrivals: %w", err)
		}
		seedSet := false
		fs.Visit(func(f *flag.Flag) { seedSet = seedSet || f.Name == "seed" })
		if seedSet && o.spread != whatif.SpreadRandom {
			return fmt.Errorf("--seed %d: only --arrivals random draws at random; add --arrivals random, or drop --seed", o.seed)
		}
		o.startCost = o.coldStart
		if *startCost != "" {
			if o.startCost, err = time.ParseDuration(*startCost); err != nil || o.startCost < 0 {
				return fmt.Errorf("--start-cost %q: want a duration of at least 0, e.g. 1s or 30s "+
					"(the replica time one start costs: pulling, starting and warming a container)", *startCost)
			}
		}
		return o.checkTrace(fs)
	}
}

// options are the whatif.Options of o for rev.
func (o *whatifOptions) options(rev *config.Revision) whatif.Options {
	if o.parkedCost > 0 && rev.Parking.Cost != o.parkedCost {
		c := *rev // (a Revision is immutable once built: a copy carries the flag's cost)
		c.Parking.Cost = o.parkedCost
		rev = &c
	}
	return whatif.Options{Revision: rev, ColdStart: o.coldStart, Spread: o.spread, Seed: o.seed, StartCost: o.startCost, ParkedWake: o.parkedWake}
}

// checkTrace checks the shared flags once parsed.
func (o *whatifOptions) checkTrace(fs *flag.FlagSet) error {
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q: the trace is given with --invocations and --durations", fs.Arg(0))
	case o.invocations == "" || o.durations == "":
		return errors.New("--invocations FILE and --durations FILE are required")
	case o.coldStart < 0:
		return fmt.Errorf("--cold-start %v: must be at least 0", o.coldStart)
	case o.limit < 0:
		return fmt.Errorf("--limit %d: must be at least 0 (0: all functions)", o.limit)
	}
	return nil
}

func runWhatif(args []string, s streams) int {
	o, err := parseWhatifFlags(args, s.err)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler whatif: %v\n", err)
		return 2
	}
	rev, code := whatifRevision(o.manifests, s)
	if rev == nil {
		return code
	}
	fns, err := loadTrace(o)
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler whatif: %v\n", err)
		return 2
	}
	results := simulateAll(fns, o.options(rev), newProgress(s.err, len(fns)))
	w := bufio.NewWriter(s.out)
	err = writeWhatif(w, o.output, results, whatif.PolicyOf(rev))
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler whatif: writing output: %v\n", err)
		return 2
	}
	return 0
}

// whatifRevision is the revision every function runs with: the
// config-autoscaler ConfigMap and the first Deployment's pod template
// annotations of the manifests, through config.NewRevision as on a cluster.
func whatifRevision(files []string, s streams) (*config.Revision, int) {
	as, ann, code := manifestConfig("whatif", files, s)
	if as == nil {
		return nil, code
	}
	return checkedRevision(as, ann, s)
}

// manifestConfig reads, for the command cmd (whatif, tune, simulate), the
// config-autoscaler ConfigMap and the first revision's annotations (a
// Deployment's, or a Knative Service's or Configuration's template's) of
// the manifests; nil and an exit status when they cannot be used.
func manifestConfig(cmd string, files []string, s streams) (*config.Autoscaler, map[string]string, int) {
	p, code := readManifestParts(cmd, files, s)
	if code != 0 {
		return nil, nil, code
	}
	as, ann := config.Defaults(), map[string]string{}
	if p.config != nil {
		var err error
		if as, err = config.NewAutoscalerFromMap(p.config); err != nil {
			fmt.Fprintf(s.err, "autoscaler %s: %s: invalid %s:\n%v\n", cmd, p.configOrigin, config.ConfigMapName, err)
			return nil, nil, 1
		}
	}
	if p.annotations != nil {
		ann = p.annotations
	}
	return as, ann, 0
}

// manifestParts are what the manifests give a command that runs one
// revision; nil: not given.
type manifestParts struct {
	config       map[string]string // the config-autoscaler ConfigMap's data
	configOrigin manifest.Origin
	annotations  map[string]string // the first revision's template annotations
}

// readManifestParts reads files for cmd; a non-zero exit status when they
// cannot be used (printed).
func readManifestParts(cmd string, files []string, s streams) (manifestParts, int) {
	var p manifestParts
	if len(files) == 0 {
		return p, 0
	}
	set, err := readManifests(files, s.in)
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler %s: %v\n", cmd, err)
		return p, 2
	}
	cms := set.ConfigMapsNamed(config.ConfigMapName)
	if len(cms) > 1 {
		fmt.Fprintf(s.err, "autoscaler %s: %s is given %d times; give only one\n", cmd, config.ConfigMapName, len(cms))
		return p, 1
	}
	if len(cms) == 1 {
		p.config, p.configOrigin = cms[0].Object.Data, cms[0].Origin
		if p.config == nil {
			p.config = map[string]string{}
		}
	}
	if len(set.Deployments) > 0 {
		d := &set.Deployments[0]
		if d.Knative != nil && len(d.Knative.Errors) > 0 {
			fmt.Fprintf(s.err, "autoscaler %s: %s: %s %s cannot run on Ebb:\n  %s\n", cmd, d.Origin, d.Kind(), d.Object.Name,
				strings.Join(d.Knative.Errors, "\n  "))
			return p, 1
		}
		p.annotations = d.TemplateAnnotations()
	}
	return p, 0
}

// checkedRevision is config.NewRevision for whatif: the KPA class only.
func checkedRevision(as *config.Autoscaler, ann map[string]string, s streams) (*config.Revision, int) {
	rev, err := config.NewRevision(as, ann, hpa.DocumentParser{})
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler whatif: invalid annotations:\n%v\n", err)
		return nil, 1
	}
	if rev.Class != config.ClassKPA {
		fmt.Fprintf(s.err, "autoscaler whatif: class %q: whatif runs the %s class only; remove the class annotation\n", rev.Class, config.ClassKPA)
		return nil, 1
	}
	return rev, 0
}

// loadTrace reads the trace files and selects the functions.
func loadTrace(o whatifOptions) ([]whatif.Function, error) {
	inv, err := os.Open(o.invocations)
	if err != nil {
		return nil, fmt.Errorf("reading invocations: %w", err)
	}
	defer inv.Close()
	fns, err := whatif.ParseInvocations(bufio.NewReaderSize(inv, 1<<16))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.invocations, err)
	}
	fns, err = selectFunctions(fns, o.functions, o.limit)
	if err != nil {
		return nil, err
	}
	dur, err := os.Open(o.durations)
	if err != nil {
		return nil, fmt.Errorf("reading durations: %w", err)
	}
	defer dur.Close()
	durations, err := whatif.ParseDurations(bufio.NewReader(dur))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.durations, err)
	}
	if err := whatif.JoinDurations(fns, durations); err != nil {
		return nil, fmt.Errorf("%s: %w", o.durations, err)
	}
	if o.memory != "" {
		mem, err := os.Open(o.memory)
		if err != nil {
			return nil, fmt.Errorf("reading memory: %w", err)
		}
		defer mem.Close()
		if _, err := whatif.ParseMemory(bufio.NewReader(mem)); err != nil {
			return nil, fmt.Errorf("%s: %w", o.memory, err)
		}
	}
	return fns, nil
}

// selectFunctions keeps the named functions (in file order; every name
// must exist), then the first limit of them.
func selectFunctions(fns []whatif.Function, names []string, limit int) ([]whatif.Function, error) {
	if len(names) > 0 {
		want := map[string]bool{}
		for _, n := range names {
			want[n] = true
		}
		var kept []whatif.Function
		for _, f := range fns {
			if want[f.Hash] {
				kept = append(kept, f)
				delete(want, f.Hash)
			}
		}
		if len(want) > 0 {
			var missing []string
			for _, n := range names {
				if want[n] {
					missing = append(missing, n)
				}
			}
			return nil, fmt.Errorf("--function %s: not in the invocations file", strings.Join(missing, ", "))
		}
		fns = kept
	}
	if limit > 0 && limit < len(fns) {
		fns = fns[:limit]
	}
	return fns, nil
}

// simulateAll runs the functions on GOMAXPROCS workers; the results keep
// the functions' order, so the output does not depend on scheduling.
func simulateAll(fns []whatif.Function, o whatif.Options, p *progress) []whatif.Result {
	results := make([]whatif.Result, len(fns))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), max(len(fns), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				results[i] = whatif.Run(&fns[i], o)
				p.done()
			}
		}()
	}
	for i := range fns {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	p.finish()
	return results
}

func writeWhatif(w io.Writer, format string, results []whatif.Result, policy string) error {
	sum := whatif.NewSummary(policy)
	for i := range results {
		sum.Merge(&results[i])
	}
	if format == "yaml" {
		doc := whatifDoc{Functions: make([]whatif.Line, 0, len(results)), Summary: sum.Line()}
		for i := range results {
			doc.Functions = append(doc.Functions, results[i].Line())
		}
		return writeStructured(w, "yaml", doc)
	}
	if format == "json" {
		var buf []byte
		for i := range results {
			buf = append(results[i].AppendJSON(buf[:0]), '\n')
			w.Write(buf) // bufio keeps the error for Flush
		}
		w.Write(append(sum.AppendJSON(nil), '\n'))
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "function\trequests\tcold starts\tshare\tfrom zero\twait p50 ms\twait p99 ms\treplica-s\tidle replica-s\tpeak\tpolicy\t"+
		"replica starts\tcost replica-s\t")
	row := func(r *whatif.Result) {
		l := r.Line()
		name := l.Function
		if len(name) > 12 {
			name = name[:12]
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.4f\t%d\t%g\t%g\t%.0f\t%.0f\t%d\t%s\t%d\t%.0f\t\n", name, l.Requests, l.ColdStarts, l.ColdStartShare,
			l.ScaleFromZero, l.WaitP50Ms, l.WaitP99Ms, l.ReplicaSeconds, l.IdleReplicaSeconds, l.PeakReplicas, l.Policy,
			l.ReplicaStarts, l.CostReplicaSeconds)
	}
	for i := range results {
		row(&results[i])
	}
	row(&sum)
	return tw.Flush()
}

// whatifDoc is whatif -o yaml: the JSON lines' objects as one document,
// the functions' and the summary's.
type whatifDoc struct {
	Functions []whatif.Line `json:"functions"`
	Summary   whatif.Line   `json:"summary"`
}

// progress draws a bar on a terminal's standard error; elsewhere it is
// silent, so that logs and pipes get no control characters.
type progress struct {
	mu         sync.Mutex // guards n and the writes
	w          io.Writer  // nil: no bar
	n, total   int
	lastDrawn  int
	barColumns int
}

func newProgress(errOut io.Writer, total int) *progress {
	p := &progress{total: total, barColumns: 40}
	if f, ok := errOut.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.w = f
		}
	}
	return p
}

// quiet is a progress that draws nothing (for a caller that counts on
// its own).
func (p *progress) quiet() *progress { return &progress{} }

func (p *progress) done() {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	filled := p.n * p.barColumns / max(p.total, 1)
	if filled == p.lastDrawn && p.n != p.total {
		return
	}
	p.lastDrawn = filled
	fmt.Fprintf(p.w, "\rwhatif [%s%s] %d/%d functions", strings.Repeat("#", filled), strings.Repeat(" ", p.barColumns-filled), p.n, p.total)
}

func (p *progress) finish() {
	if p.w != nil {
		fmt.Fprintln(p.w)
	}
}
