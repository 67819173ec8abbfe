package autoscaler

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/config/hpa"
	"ebb.dev/ebb/pkg/scaling/decider"
)

// TestHistoryFoldShowsTheLatestNumbers: a decision folded into the one
// before it (same counts and reason codes, other numbers) shows the latest
// stable average in its header and in its reasons alike.
func TestHistoryFoldShowsTheLatestNumbers(t *testing.T) {
	rev := &config.Revision{
		Class: config.ClassKPA, Metric: config.MetricConcurrency,
		Total: 100, TargetUtilization: 1, Target: 100, PanicThreshold: 2, TargetBurstCapacity: 211,
		StableWindow: 6 * time.Second, PanicWindow: 6 * time.Second, Aggregation: config.AggregationLinear,
		MaxScaleUpRate: 1000, MaxScaleDownRate: 2, InitialScale: 1, InitialReplicas: 1,
		ProgressDeadline: 600 * time.Second, ActivatorCapacity: 100, TickInterval: time.Second,
	}
	d := decider.New(rev, time.Unix(0, 0), 1)
	h := newHistory(4)
	var stables []float64
	for sec, conc := range []float64{4, 5, 6, 7, 8} {
		now := time.Unix(int64(sec+1), 0)
		d.Record(now, conc, 0)
		dec := d.Decide(decider.Input{Now: now, Ready: 1, Reachable: true})
		stables = append(stables, dec.Stable)
		h.add(&dec, 1)
	}
	v := h.last(1)[0]
	if latest := stables[len(stables)-1]; v.Repeated == 0 || v.Stable != latest || stables[len(stables)-1-v.Repeated] == latest {
		t.Fatalf("want the last decisions folded, with the latest stable average %v in the header; got %+v (averages %v)", latest, v, stables)
	}
	want := "stable average " + strconv.FormatFloat(widen(float32(v.Stable)), 'g', 10, 64) + " "
	for _, r := range v.Reasons {
		if r.Code == string(decider.StableTarget) && !strings.HasPrefix(r.Message, want) {
			t.Errorf("folded decision: header stable %v, reason %q; want the reason to say %q", v.Stable, r.Message, want)
		}
	}
}

// sameAs reports whether e and o differ only in their numbers: then o is
// folded into e as a repeat (the reference of fold).
func (e *entry) sameAs(o *entry) bool {
	if e.rec != o.rec || e.des != o.des || e.rdy != o.rdy || e.panic != o.panic || e.act != o.act ||
		e.state != o.state || e.hasData != o.hasData || (e.ebc < 0) != (o.ebc < 0) || e.n != o.n {
		return false
	}
	for i := range e.n {
		if e.reasons[i].code != o.reasons[i].code || e.reasons[i].detail != o.reasons[i].detail {
			return false
		}
	}
	return true
}

// entryHistory is the history as a plain list of entries, folding the same
// way: the reference of the packed one.
type entryHistory struct {
	entries []entry
	limit   int
}

func (h *entryHistory) add(d *decider.Decision, ready int32) {
	e := entryOf(d, ready)
	if n := len(h.entries); n > 0 && h.entries[n-1].sameAs(&e) {
		last := &h.entries[n-1]
		last.repeat++
		last.until = e.at
		last.ebc, last.stable, last.panicV, last.reasons = e.ebc, e.stable, e.panicV, e.reasons
		return
	}
	h.entries = append(h.entries, e)
	if len(h.entries) > h.limit {
		h.entries = h.entries[1:]
	}
}

func (h *entryHistory) last(n int) []DecisionView {
	var out []DecisionView
	for i := len(h.entries) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, h.entries[i].view())
	}
	return out
}

// TestHistoryPackedAgreesWithEntries: the packed records give back what a
// list of entries would, through folds, evictions and decisions of many
// shapes (deciders of both classes on random load, some fields moved).
func TestHistoryPackedAgreesWithEntries(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	anns := []map[string]string{
		{"autoscaling.knative.dev/target": "10", "autoscaling.knative.dev/min-scale": "1", "autoscaling.knative.dev/max-scale": "4"},
		{"autoscaling.knative.dev/class": "hpa.autoscaling.knative.dev", "autoscaling.knative.dev/metric": "concurrency",
			"autoscaling.knative.dev/target": "10"},
	}
	for _, limit := range []int{1, 3, 10} {
		for _, ann := range anns {
			rev, err := config.NewRevision(config.Defaults(), ann, hpa.DocumentParser{})
			if err != nil {
				t.Fatal(err)
			}
			packed, ref := newHistory(limit), &entryHistory{limit: limit}
			slow := newHistory(limit) // folds by entryOf and fold only: packed's foldDecision must write the same bytes
			first := time.Unix(1_800_000_000, 0)
			st := decider.NewStepper(rev, decider.StepperOptions{First: first, Ready: 1})
			for sec := range int64(2000) {
				ready := int32(rng.IntN(5))
				in := decider.Second{Ready: &ready}
				if rng.IntN(5) > 0 {
					in.HasMetric, in.Concurrency, in.RPS = true, rng.Float64()*float64(rng.IntN(200)), rng.Float64()*100
				}
				d, ok := st.Step(first.Add(time.Duration(sec)*time.Second), in)
				if !ok {
					continue
				}
				if rng.IntN(3) == 0 {
					d.Stable, d.PanicAverage, d.EBC = rng.NormFloat64()*1e6, rng.Float64(), int32(rng.IntN(400))-200
				}
				switch rng.IntN(12) { // flags moved alone: a fold must see each
				case 0:
					d.ActivatorInPath = !d.ActivatorInPath
				case 1:
					d.Panic = !d.Panic
				case 2:
					d.HasData = !d.HasData
				}
				packed.add(&d, ready)
				ref.add(&d, ready)
				slow.addFolding(&d, ready, false)
				if !bytes.Equal(slow.recs, packed.recs) || slow.n != packed.n || slow.newest != packed.newest {
					t.Fatalf("limit %d, %s, second %d: the fast fold's records differ from fold's:\n%x\n%x", limit, rev.Class, sec, slow.recs, packed.recs)
				}
				if diff := cmp.Diff(ref.last(limit+1), packed.last(limit+1)); diff != "" {
					t.Fatalf("limit %d, %s, second %d (-entries +packed):\n%s", limit, rev.Class, sec, diff)
				}
				records := 0
				for o := 0; o < len(packed.recs); o += recordSize(packed.recs[o:]) {
					records++
				}
				if records != packed.n || records > limit {
					t.Fatalf("limit %d: %d records kept, counted %d", limit, records, packed.n)
				}
			}
		}
	}
}

// TestInternAgreesWithTheTable: through its cache, intern gives every name
// the number the table holds for it, for names that share cache slots and
// names used from many goroutines at once, and name gives the name back.
func TestInternAgreesWithTheTable(t *testing.T) {
	names := []string{"", "StableTarget", "PanicTarget", "TooManyReplicas", "TooFewReplicas"}
	for i := range 40 { // more than the cache's slots: some share one
		names = append(names, "intern-test-"+strconv.Itoa(i))
	}
	done := make(chan map[string]uint8)
	for g := range 4 {
		go func() {
			got := map[string]uint8{}
			for k := range 2000 {
				s := names[(k*7+g)%len(names)]
				got[s] = intern(s)
			}
			done <- got
		}()
	}
	for range 4 {
		for s, i := range <-done {
			if want := interned.snap.Load().index[s]; i != want {
				t.Errorf("intern(%q) = %d, the table says %d", s, i, want)
			}
			if n := name(i); n != s {
				t.Errorf("name(intern(%q)) = %q", s, n)
			}
		}
	}
}
