// Command whatif is `make bench-whatif`: on a trace in the Azure Functions
// 2019 format, it runs `autoscaler whatif`'s simulation for Knative's
// policy, a fixed 10-minute keep-alive and the learned policy (its default
// and a setting aimed at the 10-minute keep-alive's cold starts) in one
// run, and prints the ratios of cold starts and idle replica-seconds
// against their targets, on the whole trace and on its two halves split by
// owner hash (a policy must hold on traffic it was not tuned on), their
// spread over the trace's owners, and the time the run took. The parked
// tier: Knative's rules and the learned policy with parking (parked-cost
// 0.05, 0.1 and 0.2), and a grid of fixed pairs (awake after the last
// request, then parked, then zero: -pairs) that the learned policy is
// compared with at each parked-cost, on every seed. With -predictors it also runs the
// learned settings with other predictors in the policy's place (the
// comparison of docs/whatif.md).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"
	"ebb.dev/ebb/pkg/scaling/whatif"
)

// setting is one configuration of the run.
type setting struct {
	name string
	ann  map[string]string
}

var settings = []setting{
	{name: "knative", ann: nil},
	{name: "keep-alive 10m", ann: map[string]string{config.AnnotationScaleToZeroPodRetention: "10m"}},
	{name: "learned", ann: map[string]string{config.AnnotationScaleToZeroPolicy: config.ScaleToZeroLearned}},
	// A dearer cold start: the setting the README gives keep-alive users.
	{name: "learned 10m", ann: map[string]string{config.AnnotationScaleToZeroPolicy: config.ScaleToZeroLearned,
		config.AnnotationColdStartCost: "10m"}},
	// The parked tier (docs/kubernetes.md, Parking): Knative's and the
	// learned policy with parking, at parked-cost 0.1 (the default) and
	// the cost fraction's effect (0.05, 0.2).
	{name: "knative parked", ann: map[string]string{config.AnnotationEnableParking: "true"}},
	{name: "learned parked", ann: parked("0.1")},
	{name: "learned parked .05", ann: parked("0.05")},
	{name: "learned parked .2", ann: parked("0.2")},
}

// Indexes into settings of the targets' sides.
const (
	setKnative = iota
	setKeepAlive
	setLearned
	setLearned10m
	setKnativeParked
	setLearnedParked
	setLearnedParked05
	setLearnedParked2
)

// parkedCosts are the parked-costs whose effect the run reports, each
// with its learned setting.
var parkedCosts = []struct {
	cost    float64
	setting int
}{{0.05, setLearnedParked05}, {0.1, setLearnedParked}, {0.2, setLearnedParked2}}

// parked is the learned policy with parking at parked-cost cost.
func parked(cost string) map[string]string {
	return map[string]string{config.AnnotationScaleToZeroPolicy: config.ScaleToZeroLearned, config.AnnotationEnableParking: "true",
		config.AnnotationParkedCost: cost}
}

// The targets: the learned defaults against Knative's (cold starts, cost:
// idle replica-seconds plus the start cost of each replica start), and
// the keep-alive setting against the fixed 10-minute keep-alive.
const (
	defaultsMaxCold, defaultsMaxCost   = 0.20, 0.90
	keepAliveMaxCold, keepAliveMaxCost = 1.00, 0.50
	parkedMaxCold, parkedMaxCost       = 0.05, 0.70
)

func main() {
	dir := flag.String("trace", "", "the trace directory (invocations.csv, durations.csv)")
	cold := flag.Duration("cold-start", time.Second, "replica cold start")
	preds := flag.String("predictors", "", `also run the learned settings with these predictors in the policy's place, to compare (comma-separated, or "all"; `+
		fmt.Sprint(decider.Predictors())+")")
	spread := flag.String("arrivals", whatif.SpreadRandomName, `where in its minute each invocation arrives: "random" (a random second, `+
		`seeded) or "even" (the contract's spread)`)
	seeds := flag.Int("seeds", 3, "with -arrivals random, run every setting with seeds 1 to N and print the spread over them")
	startCost := flag.Duration("start-cost", -1, "replica-seconds charged for each replica start in the cost (default: -cold-start)")
	parkedWake := flag.Duration("parked-wake", whatif.DefaultParkedWake, "what the first request to a parked replica waits (measure it: make test-node)")
	pairs := flag.String("pairs", defaultPairs, `the fixed pairs to compare the learned policy with: "ACTIVE,... x PARKED,...", `+
		`each pair awake for ACTIVE after the last request (the panic window: 0.6s-60s with the default stable window), then parked `+
		`for PARKED (max-parked-duration), then at zero; run on every seed; "" for none`)
	only := flag.String("settings", "", "run only the settings whose names match this regular expression (default: all); "+
		"a target is printed when both its sides ran")
	flag.Parse()
	o := runOptions{cold: *cold, seeds: *seeds, startCost: *startCost, parkedWake: *parkedWake}
	var err error
	if o.pairs, err = parsePairs(*pairs); err != nil {
		fmt.Fprintln(os.Stderr, "bench-whatif: -pairs:", err)
		os.Exit(2)
	}
	if o.only, err = regexp.Compile(*only); err != nil {
		fmt.Fprintln(os.Stderr, "bench-whatif: -settings:", err)
		os.Exit(2)
	}
	if o.startCost < 0 {
		o.startCost = o.cold
	}
	compare, err := parsePredictors(*preds)
	o.compare = compare
	if err == nil {
		o.spread, err = whatif.ParseSpread(*spread)
		if err != nil {
			err = fmt.Errorf("-arrivals: %w", err)
		}
	}
	if err == nil && o.seeds < 1 {
		err = fmt.Errorf("-seeds %d: want at least 1 (3 shows how much the random arrivals move the ratios)", o.seeds)
	}
	if err == nil {
		err = run(*dir, o, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-whatif:", err)
		os.Exit(1)
	}
}

func parsePredictors(s string) ([]decider.Predictor, error) {
	var out []decider.Predictor
	switch s {
	case "":
		return nil, nil
	case "all":
		return decider.Predictors()[1:], nil
	}
	for _, name := range strings.Split(s, ",") {
		p, err := decider.ParsePredictor(strings.TrimSpace(name))
		if err != nil {
			return nil, fmt.Errorf("-predictors: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// runOptions are run's settings from the flags.
type runOptions struct {
	cold      time.Duration
	compare   []decider.Predictor
	spread    whatif.Spread // -arrivals
	seeds     int           // -seeds: with random arrivals, seeds 1 to seeds
	startCost time.Duration // -start-cost
	// parkedWake is -parked-wake: the wait of a request that wakes a
	// parked replica.
	parkedWake time.Duration
	only       *regexp.Regexp // -settings; nil runs all
	pairs      []pair         // -pairs
}

// runs reports whether setting s runs.
func (o runOptions) runs(s setting) bool { return o.only == nil || o.only.MatchString(s.name) }

// options are the simulation's options for rev and seed.
func (o runOptions) options(rev *config.Revision, seed uint64) whatif.Options {
	return whatif.Options{Revision: rev, ColdStart: o.cold, Spread: o.spread, Seed: seed, StartCost: o.startCost, ParkedWake: o.parkedWake}
}

func run(dir string, o runOptions, out io.Writer) error {
	fns, err := load(dir)
	if err != nil {
		return err
	}
	seeds := []uint64{0}
	arrivals := "even in their minute (one run: the even spread draws nothing)"
	if o.spread == whatif.SpreadRandom {
		seeds = nil
		for s := range o.seeds {
			seeds = append(seeds, uint64(s+1))
		}
		arrivals = fmt.Sprintf("random in their minute, seeds 1 to %d", o.seeds)
	}
	began := time.Now()
	revs := make([]*config.Revision, len(settings))
	for i, s := range settings {
		if revs[i], err = config.NewRevision(nil, s.ann, nil); err != nil {
			return fmt.Errorf("setting %s: %w", s.name, err)
		}
	}
	// results[seed][setting][function]
	results := make([][][]whatif.Result, len(seeds))
	for k, seed := range seeds {
		results[k] = make([][]whatif.Result, len(settings))
		for i, s := range settings {
			if o.runs(s) {
				results[k][i] = simulate(fns, o.options(revs[i], seed))
			}
		}
	}
	var pairRevs []*config.Revision
	pairResults := make([][][]whatif.Result, len(seeds)) // [seed][pair][function]
	if len(o.pairs) > 0 && o.runs(settings[setKnative]) {
		if pairRevs, err = pairRevisions(o.pairs); err != nil {
			return err
		}
		for k, seed := range seeds {
			for _, rev := range pairRevs {
				pairResults[k] = append(pairResults[k], simulate(fns, o.options(rev, seed)))
			}
		}
	}
	took := time.Since(began)
	half := halves(fns)
	fmt.Fprintf(out, "bench-whatif: %d functions, %d owners (%d and %d in the halves by owner hash: first hex digit 0-7, 8-f), a day each, "+
		"--cold-start %v, arrivals %s, cost = idle replica-seconds + parked ones at the setting's parked-cost + %v a replica start, "+
		"a wake from parked %v, %d settings and %d fixed pairs x %d runs in %.1fs (GOMAXPROCS %d)\n\n",
		len(fns), len(owners(fns)), len(owners(half[0].of(fns))), len(owners(half[1].of(fns))), o.cold, arrivals, o.startCost, o.parkedWake,
		len(settings), len(pairRevs), len(seeds), took.Seconds(), runtime.GOMAXPROCS(0))
	fmt.Fprintf(out, "%-20s %5s %12s %10s %14s %14s %14s %14s %16s %12s\n", "setting", "seed", "cold starts", "share", "idle replica-s",
		"parked repl-s", "replica starts", "cost replica-s", "replica-s", "parked wakes")
	for i, s := range settings {
		for k, seed := range seeds {
			if !o.runs(s) {
				continue
			}
			sum := merged(s.name, results[k][i], nil)
			fmt.Fprintf(out, "%-20s %5s %12d %10.5f %14.0f %14.0f %14d %14.0f %16.0f %12d\n", s.name, seedName(seed), sum.ColdStarts,
				sum.ColdStartShare(), sum.IdleReplicaSeconds(), sum.ParkedReplicaSeconds(), sum.ReplicaStarts, sum.Cost(), sum.ReplicaSeconds(),
				sum.WakesFromParked)
		}
	}
	fmt.Fprintln(out)
	pick := func(i int) [][]whatif.Result {
		rs := make([][]whatif.Result, len(seeds))
		for k := range seeds {
			rs[k] = results[k][i]
		}
		return rs
	}
	targets := []struct {
		title      string
		a, b       int
		cold, cost float64
	}{
		{"learned (defaults) vs knative", setLearned, setKnative, defaultsMaxCold, defaultsMaxCost},
		{settings[setLearned10m].name + " vs keep-alive 10m", setLearned10m, setKeepAlive, keepAliveMaxCold, keepAliveMaxCost},
		{"learned parked (parked-cost 0.1) vs knative", setLearnedParked, setKnative, parkedMaxCold, parkedMaxCost},
		{"knative parked vs knative", setKnativeParked, setKnative, parkedMaxCold, parkedMaxCost},
	}
	for _, tg := range targets {
		if o.runs(settings[tg.a]) && o.runs(settings[tg.b]) {
			target(out, tg.title, fns, half, seeds, pick(tg.a), pick(tg.b), tg.cold, tg.cost)
		}
	}
	if len(pairRevs) > 0 {
		beaten := 0
		for k, seed := range seeds {
			beaten += comparePairs(out, half, o.pairs, seed, pairResults[k], results[k], o)
		}
		fmt.Fprintf(out, "fixed pairs over %d seeds: the learned policy with parking is dominated by a pair in %d of %d comparisons "+
			"(seeds x parked-costs x all and each half)\n\n", len(seeds), beaten, len(seeds)*len(parkedCosts)*3)
	}
	if len(o.compare) > 0 {
		if len(seeds) > 1 {
			fmt.Fprintf(out, "predictors compared on seed %d only\n", seeds[0])
		}
		o.seeds = 1
		return comparePredictors(out, fns, half, o, seeds[0], revs, results[0])
	}
	return nil
}

func seedName(seed uint64) string {
	if seed == 0 {
		return "even"
	}
	return fmt.Sprint(seed)
}

// sweepCosts are the cold-start costs of the keep-alive setting (its
// retention and lead) that -predictors runs each predictor at, to compare
// their idle replica-seconds at equal cold starts.
var sweepCosts = []string{"1m", "2m", "5m", "15m", "30m", "60m"}

// comparePredictors runs the learned defaults and the keep-alive setting
// across sweepCosts with each predictor in the policy's place, and prints
// their ratios and each one's idle replica-seconds at the 10-minute
// keep-alive's cold starts (interpolated between the two costs around
// them), on all functions and on each half.
func comparePredictors(out io.Writer, fns []whatif.Function, half [2]ownerHalf, o runOptions, seed uint64, revs []*config.Revision,
	results [][]whatif.Result) error {
	with := func(rev *config.Revision, p decider.Predictor) whatif.Options {
		wo := o.options(rev, seed)
		wo.Predictor = p
		return wo
	}
	fmt.Fprintf(out, "predictors: cold-start and idle ratios (all / owners 0-7 / owners 8-f)\n")
	fmt.Fprintf(out, "%-17s %-6s %-42s %s\n", "predictor", "cost", "vs knative (defaults) or keep-alive 10m", "idle at keep-alive 10m's cold starts")
	for _, p := range append([]decider.Predictor{decider.PredictorPhase}, o.compare...) {
		def := results[2]
		if p != decider.PredictorPhase {
			def = simulate(fns, with(revs[2], p))
		}
		fmt.Fprintf(out, "%-17s %-6s %s\n", p, strings.TrimSuffix(config.DefaultColdStartCost.String(), "0s"), ratios(fns, half, def, results[0]))
		var sweep [][]whatif.Result
		for _, c := range sweepCosts {
			ann := maps.Clone(settings[3].ann)
			ann[config.AnnotationColdStartCost] = c
			rev, err := config.NewRevision(nil, ann, nil)
			if err != nil {
				return fmt.Errorf("cost %s: %w", c, err)
			}
			rs := simulate(fns, with(rev, p))
			sweep = append(sweep, rs)
			if p == decider.PredictorHybridHistogram {
				fmt.Fprintf(out, "%-17s %-6s %s\n", "", "-", ratios(fns, half, rs, results[1]))
				break // it has no cost: one point
			}
			fmt.Fprintf(out, "%-17s %-6s %s\n", "", c, ratios(fns, half, rs, results[1]))
		}
		at := fmt.Sprintf("%-17s %-6s %-42s %s", "", "", "", "")
		for i, in := range [][]bool{nil, half[0].in, half[1].in} {
			if i > 0 {
				at += " / "
			}
			at += idleAtCold(sweep, results[1], in)
		}
		fmt.Fprintln(out, at)
	}
	fmt.Fprintln(out)
	return nil
}

// idleAtCold interpolates the idle ratio of a sweep (ordered by cost) at
// the cold starts of base, on the functions in; "-" when the sweep does
// not reach them.
func idleAtCold(sweep [][]whatif.Result, base []whatif.Result, in []bool) string {
	want := float64(merged("", base, in).ColdStarts)
	for i := 1; i < len(sweep); i++ {
		c0, i0 := ratio(sweep[i-1], base, in)
		c1, i1 := ratio(sweep[i], base, in)
		c0, c1 = c0*want, c1*want
		if c0 >= want && c1 <= want && c0 > c1 {
			return fmt.Sprintf("%.3f", i0+(i1-i0)*(c0-want)/(c0-c1))
		}
	}
	return "-"
}

// ratios formats cold and idle ratios of a against b over all functions
// and each half.
func ratios(fns []whatif.Function, half [2]ownerHalf, a, b []whatif.Result) string {
	c, i := ratio(a, b, nil)
	s := fmt.Sprintf("%.3f %.3f", c, i)
	for _, h := range half {
		c, i := ratio(a, b, h.in)
		s += fmt.Sprintf(" / %.3f %.3f", c, i)
	}
	return s
}

// ownerHalf is one half of the functions, split by their owner's hash.
type ownerHalf struct {
	name string
	in   []bool // by function
}

func (h ownerHalf) of(fns []whatif.Function) []whatif.Function {
	var out []whatif.Function
	for j := range fns {
		if h.in[j] {
			out = append(out, fns[j])
		}
	}
	return out
}

// halves splits the functions by the first hex digit of their owner's
// hash: 0-7 and 8-f, a split no function's traffic chose.
func halves(fns []whatif.Function) [2]ownerHalf {
	h := [2]ownerHalf{{name: "owners 0-7", in: make([]bool, len(fns))}, {name: "owners 8-f", in: make([]bool, len(fns))}}
	for j := range fns {
		low := fns[j].Owner != "" && fns[j].Owner[0] < '8'
		h[0].in[j], h[1].in[j] = low, !low
	}
	return h
}

// merged sums the results of the functions in (all when in is nil).
func merged(name string, rs []whatif.Result, in []bool) whatif.Result {
	sum := whatif.NewSummary(name)
	for j := range rs {
		if in == nil || in[j] {
			sum.Merge(&rs[j])
		}
	}
	return sum
}

// ratio is a's cold starts and idle replica-seconds over b's, on the
// functions in (all when nil).
func ratio(a, b []whatif.Result, in []bool) (cold, idle float64) {
	sa, sb := merged("", a, in), merged("", b, in)
	return float64(sa.ColdStarts) / float64(sb.ColdStarts), sa.IdleReplicaSeconds() / sb.IdleReplicaSeconds()
}

// target prints, for each seed, a's cold starts, idle replica-seconds,
// replica starts and cost against b's on all functions and on each half,
// the spread of each over the seeds, whether the targets (cold starts and
// cost) hold on both halves under every seed, and, for the first seed,
// the spread over owners.
func target(out io.Writer, title string, fns []whatif.Function, half [2]ownerHalf, seeds []uint64, ra, rb [][]whatif.Result,
	maxCold, maxCost float64) {
	fmt.Fprintf(out, "%s (targets: cold starts at most %.2fx at a cost of at most %.2fx):\n", title, maxCold, maxCost)
	type ratios struct{ cold, idle, starts, cost float64 }
	parts := []struct {
		name string
		in   []bool
	}{{"all", nil}, {half[0].name, half[0].in}, {half[1].name, half[1].in}}
	got := make([][]ratios, len(parts)) // [part][seed]
	for k, seed := range seeds {
		for p, part := range parts {
			a, b := merged("", ra[k], part.in), merged("", rb[k], part.in)
			r := ratios{float64(a.ColdStarts) / float64(b.ColdStarts), a.IdleReplicaSeconds() / b.IdleReplicaSeconds(),
				float64(a.ReplicaStarts) / float64(b.ReplicaStarts), a.Cost() / b.Cost()}
			got[p] = append(got[p], r)
			fmt.Fprintf(out, "  seed %-4s %-10s cold starts %.3fx (%d / %d: %s), cost %.3fx (%.0f / %.0f: %s), idle %.3fx, replica starts %.2fx (%d / %d)\n",
				seedName(seed), part.name, r.cold, a.ColdStarts, b.ColdStarts, verdict(r.cold <= maxCold), r.cost, a.Cost(), b.Cost(),
				verdict(r.cost <= maxCost), r.idle, r.starts, a.ReplicaStarts, b.ReplicaStarts)
		}
	}
	all := true
	for p, part := range parts {
		span := func(f func(ratios) float64) (lo, hi float64) {
			lo, hi = math.Inf(1), math.Inf(-1)
			for _, r := range got[p] {
				lo, hi = min(lo, f(r)), max(hi, f(r))
			}
			return lo, hi
		}
		c0, c1 := span(func(r ratios) float64 { return r.cold })
		k0, k1 := span(func(r ratios) float64 { return r.cost })
		i0, i1 := span(func(r ratios) float64 { return r.idle })
		s0, s1 := span(func(r ratios) float64 { return r.starts })
		if part.in != nil {
			all = all && c1 <= maxCold && k1 <= maxCost
		}
		if len(seeds) == 1 {
			continue
		}
		fmt.Fprintf(out, "  over %d seeds, %-10s cold starts %.3f-%.3fx, cost %.3f-%.3fx, idle %.3f-%.3fx, replica starts %.2f-%.2fx\n",
			len(seeds), part.name, c0, c1, k0, k1, i0, i1, s0, s1)
	}
	fmt.Fprintf(out, "  both targets on both halves%s: %s\n", map[bool]string{true: " under every seed"}[len(seeds) > 1], verdict(all))
	c, i := perOwner(fns, ra[0], rb[0])
	fmt.Fprintf(out, "  seed %s, over %d owners with cold starts: cold-start ratio p10 %.2f, p50 %.2f, p90 %.2f\n", seedName(seeds[0]), len(c),
		q(c, 10), q(c, 50), q(c, 90))
	fmt.Fprintf(out, "  seed %s, over %d owners with a cost: cost ratio p10 %.2f, p50 %.2f, p90 %.2f\n\n", seedName(seeds[0]), len(i),
		q(i, 10), q(i, 50), q(i, 90))
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// perOwner returns each owner's ratios of a against b: cold starts (owners
// b gives cold starts) and cost (owners b gives a cost).
func perOwner(fns []whatif.Function, ra, rb []whatif.Result) (cold, idle []float64) {
	type sums struct{ ca, cb, ia, ib float64 }
	by := map[string]*sums{}
	for j := range fns {
		s := by[fns[j].Owner]
		if s == nil {
			s = &sums{}
			by[fns[j].Owner] = s
		}
		s.ca += float64(ra[j].ColdStarts)
		s.cb += float64(rb[j].ColdStarts)
		s.ia += ra[j].Cost()
		s.ib += rb[j].Cost()
	}
	for _, s := range by {
		if s.cb > 0 {
			cold = append(cold, s.ca/s.cb)
		}
		if s.ib > 0 {
			idle = append(idle, s.ia/s.ib)
		}
	}
	sort.Float64s(cold)
	sort.Float64s(idle)
	return cold, idle
}

// q is the nearest-rank percentile of sorted xs.
func q(xs []float64, pct int) float64 {
	if len(xs) == 0 {
		return 0
	}
	return xs[max((pct*len(xs)+99)/100, 1)-1]
}

func owners(fns []whatif.Function) []string {
	var o []string
	for _, f := range fns {
		o = append(o, f.Owner)
	}
	slices.Sort(o)
	return slices.Compact(o)
}

func simulate(fns []whatif.Function, o whatif.Options) []whatif.Result {
	res := make([]whatif.Result, len(fns))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				res[j] = whatif.Run(&fns[j], o)
			}
		}()
	}
	for j := range fns {
		jobs <- j
	}
	close(jobs)
	wg.Wait()
	return res
}

func load(dir string) ([]whatif.Function, error) {
	open := func(name string) (*os.File, error) {
		f, err := os.Open(dir + "/" + name)
		if err != nil {
			return nil, fmt.Errorf("reading the trace (set TRACE to its directory): %w", err)
		}
		return f, nil
	}
	inv, err := open("invocations.csv")
	if err != nil {
		return nil, err
	}
	defer inv.Close()
	fns, err := whatif.ParseInvocations(bufio.NewReaderSize(inv, 1<<16))
	if err != nil {
		return nil, err
	}
	dur, err := open("durations.csv")
	if err != nil {
		return nil, err
	}
	defer dur.Close()
	d, err := whatif.ParseDurations(bufio.NewReader(dur))
	if err != nil {
		return nil, err
	}
	return fns, whatif.JoinDurations(fns, d)
}

// defaultPairs is -pairs' default: awake for 2 s (as early as the
// learned policy parks: learned.MinGap), the default panic window (what
// Knative's rules with parking do) or a whole stable window, then parked
// from 10 minutes to 4 hours (the histogram's range).
const defaultPairs = "2s,6s,60s x 10m,30m,1h,2h,4h"

// pair is a fixed pair: a replica awake for active after the last request,
// then parked for parked, then at zero.
type pair struct{ active, parked time.Duration }

func (p pair) String() string { return short(p.active) + "+" + short(p.parked) }

// short is d without its trailing zero units: 10m, 1h, 1h30m, 6s.
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// parsePairs parses -pairs: "ACTIVE,... x PARKED,...", every ACTIVE with
// every PARKED.
func parsePairs(s string) ([]pair, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	as, ps, ok := strings.Cut(s, "x")
	if !ok {
		return nil, fmt.Errorf("%q: want \"ACTIVE,... x PARKED,...\", such as %q", s, defaultPairs)
	}
	durations := func(list string) ([]time.Duration, error) {
		var out []time.Duration
		for _, f := range strings.Split(list, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(f))
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("%q: want positive durations such as %q", list, "6s,60s")
			}
			out = append(out, d)
		}
		return out, nil
	}
	active, err := durations(as)
	if err != nil {
		return nil, err
	}
	parked, err := durations(ps)
	if err != nil {
		return nil, err
	}
	var out []pair
	for _, a := range active {
		for _, p := range parked {
			out = append(out, pair{a, p})
		}
	}
	return out, nil
}

// pairRevisions are the revisions of the fixed pairs: Knative's rules with
// parking, the panic window (after which a quiet replica is parked) set to
// the pair's active time through panic-window-percentage, and
// max-parked-duration to its parked time.
func pairRevisions(pairs []pair) ([]*config.Revision, error) {
	base, err := config.NewRevision(nil, nil, nil)
	if err != nil {
		return nil, err
	}
	var out []*config.Revision
	for _, p := range pairs {
		pct := 100 * p.active.Seconds() / base.StableWindow.Seconds()
		rev, err := config.NewRevision(nil, map[string]string{config.AnnotationEnableParking: "true",
			config.AnnotationPanicWindowPercentage: fmt.Sprint(pct), config.AnnotationMaxParkedDuration: p.parked.String()}, nil)
		if err != nil {
			return nil, fmt.Errorf("pair %v: %w", p, err)
		}
		out = append(out, rev)
	}
	return out, nil
}

// costAt is r's cost with a parked replica-second at parked of an idle
// one (a fixed pair's behaviour does not depend on it).
func costAt(r whatif.Result, parked float64) float64 {
	return r.IdleReplicaSeconds() + parked*r.ParkedReplicaSeconds() + float64(r.ReplicaStarts)*r.StartCost.Seconds()
}

// comparePairs prints, at each of parkedCosts, every fixed pair's cold
// starts and cost against Knative's on all functions and each half, the
// learned setting of that parked-cost beside them, and whether any pair
// dominates it (at most its cold starts at at most its cost), with the
// cheapest pair that has at most its cold starts. It returns the number
// of parts (all functions, each half, at each parked-cost) where a pair
// dominates the learned setting.
func comparePairs(out io.Writer, half [2]ownerHalf, pairs []pair, seed uint64, pr [][]whatif.Result, results [][]whatif.Result,
	o runOptions) int {
	dominated := 0
	parts := []struct {
		name string
		in   []bool
	}{{"all", nil}, {half[0].name, half[0].in}, {half[1].name, half[1].in}}
	fmt.Fprintf(out, "fixed pairs (awake ACTIVE after the last request, parked PARKED, then zero) against knative, seed %s: "+
		"cold starts and cost ratios (all / owners 0-7 / owners 8-f)\n", seedName(seed))
	for _, pc := range parkedCosts {
		if !o.runs(settings[pc.setting]) {
			continue
		}
		fmt.Fprintf(out, "parked-cost %.2f:\n", pc.cost)
		type point struct{ cold, cost float64 }
		at := func(rs []whatif.Result, in []bool, learned bool) point {
			a, k := merged("", rs, in), merged("", results[setKnative], in)
			c := costAt(a, pc.cost)
			if learned {
				c = a.Cost()
			}
			return point{float64(a.ColdStarts) / float64(k.ColdStarts), c / k.Cost()}
		}
		line := func(name string, rs []whatif.Result, learned bool) []point {
			var ps []point
			s := fmt.Sprintf("  %-20s", name)
			for i, part := range parts {
				p := at(rs, part.in, learned)
				ps = append(ps, p)
				if i > 0 {
					s += " /"
				}
				s += fmt.Sprintf(" %.3fx %.3fx", p.cold, p.cost)
			}
			fmt.Fprintln(out, s)
			return ps
		}
		grid := make([][]point, len(pairs))
		for i, p := range pairs {
			grid[i] = line("pair "+p.String(), pr[i], false)
		}
		l := line(settings[pc.setting].name, results[pc.setting], true)
		for i, part := range parts {
			var beaten []string
			cheapest, by := math.Inf(1), ""
			for j, g := range grid {
				if g[i].cold <= l[i].cold && g[i].cost <= l[i].cost {
					beaten = append(beaten, pairs[j].String())
				}
				if g[i].cold <= l[i].cold && g[i].cost < cheapest {
					cheapest, by = g[i].cost, pairs[j].String()
				}
			}
			verdict := "beats every pair"
			if len(beaten) > 0 {
				dominated++
				verdict = "does NOT beat every pair: dominated by " + strings.Join(beaten, ", ")
			}
			front := "no pair has at most its cold starts"
			if by != "" {
				front = fmt.Sprintf("the cheapest pair with at most its cold starts, %s, costs %.3fx against its %.3fx", by, cheapest, l[i].cost)
			}
			fmt.Fprintf(out, "    %-10s %s; %s\n", part.name, verdict, front)
		}
	}
	fmt.Fprintln(out)
	return dominated
}
