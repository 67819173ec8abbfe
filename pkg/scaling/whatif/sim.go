package whatif

import (
	"time"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"
	"ebb.dev/ebb/pkg/scaling/scenario"
	"ebb.dev/ebb/pkg/scaling/secondloop"
	"ebb.dev/ebb/pkg/stats"
)

// reportPeriod is the period of the activator's and the queue-proxies'
// load reports (the activator's DefaultReportPeriod, the queue-proxy's
// ReportPeriod: Knative's one second). The autoscaler closes a second
// every second, so each report is read once.
const reportPeriod = int64(time.Second)

// maxDrain bounds the time after the trace's last minute spent finishing
// the requests still in flight or queued: a day. A revision that cannot
// start a replica (an activation timeout) would otherwise hold its queue
// for ever; the live activator times such requests out.
const maxDrain = 86_400

// DefaultParkedWake is Options.ParkedWake's default for the commands
// (autoscaler whatif --parked-wake, make bench-whatif): what the first
// request to a parked replica waits beyond an awake one's. It is a
// placeholder for a measurement: make test-node prints the real node's.
const DefaultParkedWake = 20 * time.Millisecond

// activatorPod names the one activator of the simulation in its reports.
const activatorPod = "activator"

// Options are the settings of one simulation.
type Options struct {
	// Revision is every function's validated revision config
	// (config.NewRevision); it is not modified.
	Revision *config.Revision
	// ColdStart is the time from a replica's creation to its readiness.
	ColdStart time.Duration
	// OnDecision, when set, sees every decision the decider makes, with
	// its second since the trace's start (to compare with a live run's).
	OnDecision func(sec int64, dec *decider.Decision)
	// Predictor is the learned policy's predictor (its own,
	// decider.PredictorPhase, when zero); the others exist to compare
	// it with.
	Predictor decider.Predictor
	// Spread is where in its minute each invocation arrives (SpreadEven,
	// the contract's, when zero); Seed seeds SpreadRandom.
	Spread Spread
	Seed   uint64
	// StartCost is the replica time charged for each replica start in
	// Result.Cost (autoscaler whatif's --start-cost: the cold start by
	// default).
	StartCost time.Duration
	// ParkedWake is what the first request to a parked replica waits
	// beyond an awake one's (autoscaler whatif's --parked-wake), with the
	// revision's parking on (config.Parking): the replica is Ready, so it
	// is no cold start.
	ParkedWake time.Duration
}

// replica is one replica on the simulated platform: created by a
// scale-up, ready ColdStart later, ended by a scale-down (after its last
// request, when it has any).
type replica struct {
	readyAt  int64 // ns since the trace's start
	ready    bool
	draining bool              // removed by a scale-down; ends with its last request
	inFlight int64             // requests running on it
	acct     *stats.Accounting // its queue-proxy's accounting; nil until ready
	report   stats.Stat        // its queue-proxy's latest report (what a scrape reads)
}

// completion is the end of one request on a replica.
type completion struct {
	at  int64 // ns
	rep *replica
	via stats.Arrival // ViaActivator: the activator counts it too
}

// sim is one function's closed loop. Times are nanoseconds since the
// trace's start (second 0 is scenario.Epoch); the decider sees whole
// seconds, as the live autoscaler's.
type sim struct {
	rev        *config.Revision
	predictor  decider.Predictor
	onDecision func(sec int64, dec *decider.Decision)
	cold       int64 // ns
	dur        int64 // ns of each request
	now        int64
	parkedWake int64 // ns (Options.ParkedWake)

	// parked: the last decision applied parked the one replica; woken: a
	// request has woken it since (it pays the wake once).
	parked, woken bool

	// The platform: replicas in creation order.
	replicas []*replica
	nReady   int
	idle     int // ready replicas with no request in flight
	done     completionHeap

	// The activator: its accounting, held requests (arrival times, FIFO)
	// and pokes (the activator's poke and report).
	act      *stats.Accounting
	queue    []int64
	queueAt  int
	lastPoke int64
	pokes    uint64

	// The autoscaler's revision: its loop (the live one), its reports
	// (the live Inbox) and what was last applied.
	loop    secondloop.Loop
	atZero  bool
	poked   bool
	inbox   secondloop.Inbox
	reports [2]stats.Stat      // Take's buffer: one activator, a window and a poke
	late    [2]secondloop.Late // (none is late here)
	applied struct {
		known     bool
		replicas  int32
		activator bool
	}

	res      Result
	lastInt  int64 // time the integrals were last advanced to
	existing int   // replicas that exist (starting, ready or draining)
}

func at(ns int64) time.Time { return scenario.Epoch.Add(time.Duration(ns)) }

func newSim(fn *Function, o Options) *sim {
	s := &sim{
		rev:        o.Revision,
		predictor:  o.Predictor,
		onDecision: o.OnDecision,
		cold:       int64(o.ColdStart),
		dur:        int64(fn.Duration),
		parkedWake: int64(o.ParkedWake),
		act:        stats.NewAccounting(at(0)),
		lastPoke:   -reportPeriod,
		res: Result{Function: fn.Hash, Policy: PolicyOf(o.Revision), StartCost: o.StartCost, ParkedCost: parkedCost(o.Revision),
			waits: map[int64]int64{}},
	}
	return s
}

// Run simulates one function over its trace and returns what it cost.
func Run(fn *Function, o Options) Result {
	s := newSim(fn, o)
	arr := newArrivals(fn, o.Spread, o.Seed)
	next, more := arr.next()
	horizon := int64(len(fn.Invocations)) * 60
	if n := len(fn.Arrivals); n > 0 {
		horizon = max(horizon, fn.Arrivals[n-1])
	}
	sec := int64(0)
	for ; sec <= horizon || (s.busy() && sec <= horizon+maxDrain); sec++ {
		t := sec * int64(time.Second)
		s.completeUntil(t)
		s.now = t
		s.becomeReady(t)
		if sec > 0 {
			s.boundary(t)
		}
		for more && next == sec {
			s.arrive(t)
			next, more = arr.next()
		}
	}
	s.advance((sec - 1) * int64(time.Second))
	return s.res
}

func (s *sim) busy() bool { return s.done.Len() > 0 || s.queueAt < len(s.queue) }

// advance adds the replica integrals up to t.
func (s *sim) advance(t int64) {
	if d := t - s.lastInt; d > 0 {
		s.res.replicaNs += d * int64(s.existing)
		if s.parked {
			s.res.parkedNs += d * int64(s.idle) // (a parked replica serving a request is not idle)
		} else {
			s.res.idleNs += d * int64(s.idle)
		}
		s.lastInt = t
	}
}

// parkedCost is the cost fraction of a parked replica-second: the
// revision's parked-cost with parking on, 0 (none parks) without.
func parkedCost(rev *config.Revision) float64 {
	if !rev.Parking.Enabled {
		return 0
	}
	return rev.Parking.Cost
}
