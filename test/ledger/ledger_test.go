package ledger

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"
)

// scenario is one way for the app to behave, and what the client may then
// expect beyond the invariants.
type scenario struct {
	name   string
	faults func(name string) faults // name: the scenario's, to build ids
	// workers send the cases concurrently, each on its own connection.
	workers int
	// waitIdle: before each request, wait until the app has closed every
	// connection (idleClose), so the proxy's pooled one is stale.
	waitIdle bool
	// all2xx: every request must succeed (the app never failed one).
	all2xx bool
	// killQueueProxyBefore: the route's queue-proxy is crashed and
	// restarted before these cases are sent (routes with an activator in
	// front of one: its pooled connections are then stale).
	killQueueProxyBefore []string
	// only limits the scenario to these routes (nil: every route).
	only []route
}

// killCases are the requests whose arrival kills the app in the kill
// scenario: a buffered POST, a streamed chunked GET and a streamed POST.
var killCases = []string{"post-1k", "get-100k-chunked", "post-300k"}

var scenarios = []scenario{
	{name: "steady", faults: func(string) faults { return faults{} }, workers: 4, all2xx: true},
	{name: "slow", faults: func(string) faults { return faults{slow: 20 * time.Millisecond} }, workers: 4, all2xx: true},
	{name: "idle-close", faults: func(string) faults { return faults{idleClose: 300 * time.Millisecond} }, workers: 1, waitIdle: true},
	{name: "close-after-post", faults: func(string) faults { return faults{closeAfterPost: true} }, workers: 1},
	{name: "queue-proxy-kill", faults: func(string) faults { return faults{} }, workers: 1,
		killQueueProxyBefore: []string{"get-0", "post-1k", "post-64k+1", "post-200k-chunked"}, only: []route{viaChain}},
	{name: "kill", workers: 1, faults: func(name string) faults {
		f := faults{killOn: map[string]bool{}}
		for _, c := range killCases {
			f.killOn[requestID(name, c)] = true
		}
		return f
	}},
}

func requestID(scenario, bodyCase string) string { return scenario + "." + bodyCase }

// TestLedger sends every case of every scenario through every route and
// checks the app's ledger against what the client sent and saw; the
// summary table is logged (go test -v).
func TestLedger(t *testing.T) {
	var mu sync.Mutex
	var rows []row
	t.Run("routes", func(t *testing.T) {
		for ri, r := range routes {
			for si, sc := range scenarios {
				if sc.only != nil && !slices.Contains(sc.only, r) {
					continue
				}
				t.Run(string(r)+"/"+sc.name, func(t *testing.T) {
					t.Parallel()
					// Registered first, so it runs last: after the
					// proxies drained and the app stopped.
					var reqs []*sent
					var a *app
					t.Cleanup(func() {
						if reqs == nil { // the set-up failed
							return
						}
						rw := check(t, sc, reqs, a.ledger())
						rw.route, rw.scenario, rw.order, rw.app = r, sc.name, ri*len(scenarios)+si, a.faultCounts()
						mu.Lock()
						rows = append(rows, rw)
						mu.Unlock()
					})
					a = startApp(t, sc.faults(sc.name))
					reqs = drive(sc, a, front(t, r, a.addr))
				})
			}
		}
	})
	slices.SortFunc(rows, func(x, y row) int { return x.order - y.order })
	t.Log("\n" + table(rows))
}

// drive sends every case once through d.
func drive(sc scenario, a *app, d door) []*sent {
	reqs := make([]*sent, len(cases))
	bodies := make([][]byte, len(cases))
	for i, c := range cases {
		id := requestID(sc.name, c.name)
		bodies[i] = body(id, c.size)
		reqs[i] = &sent{id: id, c: c, sum: sha256.Sum256(bodies[i])}
	}
	// Worker 0 is the test's goroutine: it may crash a queue-proxy, which
	// restarts one (and may t.Fatal).
	next := make(chan int, len(cases))
	for i := range cases {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range sc.workers - 1 {
		wg.Go(func() { send(sc, a, d, next, reqs, bodies) })
	}
	send(sc, a, d, next, reqs, bodies)
	wg.Wait()
	return reqs
}

// send sends the cases it takes from next on one connection at a time.
// Only the test's goroutine gets the cases that crash a queue-proxy
// (scenarios that have them run one worker).
func send(sc scenario, a *app, d door, next <-chan int, reqs []*sent, bodies [][]byte) {
	cl := &client{addr: d.addr}
	defer cl.close()
	for i := range next {
		if slices.Contains(sc.killQueueProxyBefore, cases[i].name) {
			d.killQueueProxy()
		}
		if sc.waitIdle {
			waitUntil(func() bool { return a.openConns() == 0 })
		}
		cl.do(reqs[i], bodies[i])
	}
}

// waitUntil polls cond for up to 10s (from a worker goroutine: no Fatal;
// a condition never met shows as the scenario's requests failing).
func waitUntil(cond func() bool) {
	for deadline := time.Now().Add(10 * time.Second); !cond() && time.Now().Before(deadline); {
		time.Sleep(2 * time.Millisecond)
	}
}

// row is one line of the summary table.
type row struct {
	route    route
	scenario string
	order    int
	app      string // the app's kills/idle-closes/aborted bodies

	sent, executed, ok    int
	codes                 map[string]int // error statuses and connection errors
	duplicates, truncated int
	smuggled, mismatched  int
}

// check holds the ledger to the rules and counts what it saw. The rules:
//   - an id is executed at most once, unless its method is idempotent;
//   - every execution got the whole body the client sent (length and
//     SHA-256);
//   - nothing executes that the client did not send (a request cut out of
//     a body: smuggled);
//   - a 2xx names one execution of its own id, with the whole body, and
//     answers that id;
//   - every request ends with a 2xx, a 5xx or a connection error, within
//     the request timeout (never hangs); where the app never failed, with a
//     2xx. A 4xx is a failure: every request sent is well-formed, so a 4xx
//     answers bytes that were not a request head (a desync);
//   - (in the table) errors by status and kind.
func check(t *testing.T, sc scenario, reqs []*sent, execs []execution) row {
	rw := row{codes: map[string]int{}, sent: len(reqs)}
	var problems []string
	report := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	byID := map[string][]execution{}
	known := map[string]bool{}
	for _, s := range reqs {
		known[s.id] = true
	}
	for _, e := range execs {
		if !known[e.ID] || e.Path != "/ledger/"+e.ID {
			rw.smuggled++
			report("smuggled: the app executed %s %s (id %q), which no client sent", e.Method, e.Path, e.ID)
			continue
		}
		byID[e.ID] = append(byID[e.ID], e)
	}
	for _, s := range reqs {
		checkOne(s, byID[s.id], &rw, report)
		if sc.all2xx && s.outcome() != "2xx" {
			report("%s: %s, want 2xx (the app failed nothing in this scenario)", s.id, s.outcome())
		}
	}
	var outcomes []string // what each request that did not succeed got
	for _, s := range reqs {
		if out := s.outcome(); out != "2xx" {
			outcomes = append(outcomes, fmt.Sprintf("%s=%s%.60q", strings.TrimPrefix(s.id, sc.name+"."), out, s.answer))
		}
	}
	if len(outcomes) > 0 {
		t.Logf("not 2xx: %s", strings.Join(outcomes, " "))
	}
	for i, p := range problems {
		if i == 20 {
			t.Errorf("... and %d more problems", len(problems)-i)
			break
		}
		t.Error(p)
	}
	return rw
}

// checkOne checks one request against its executions.
func checkOne(s *sent, execs []execution, rw *row, report func(string, ...any)) {
	rw.executed += len(execs)
	if len(execs) > 1 {
		rw.duplicates += len(execs) - 1
		if !idempotent(s.c.method) {
			report("%s: %s executed %d times", s.id, s.c.method, len(execs))
		}
	}
	for _, e := range execs {
		if e.Method != s.c.method || e.Len != s.c.size || e.Sum != s.sum {
			rw.truncated++
			report("%s: executed (#%d) as %s with %d bytes (sha256 %x...), sent %s with %d bytes (%x...)",
				s.id, e.Seq, e.Method, e.Len, e.Sum[:4], s.c.method, s.c.size, s.sum[:4])
		}
	}
	out := s.outcome()
	switch out {
	case "2xx":
		rw.ok++
		if !answered(s, execs) {
			rw.mismatched++
			report("%s: 2xx (execution %d, body %.40q) matches no whole execution of it", s.id, s.exec, s.answer)
		}
		return
	case "hung":
		report("%s: no answer within %v: %v", s.id, requestTimeout, s.connErr)
	case "conn-error":
	default:
		switch s.status / 100 {
		case 4:
			// Every request of the matrix is well-formed: a 4xx is the
			// answer to something else, the rest of an earlier body
			// parsed as a request on a connection kept open after an
			// answer that left that body unread (a desync).
			report("%s: %d %.60q to a well-formed request: a proxy parsed part of a body as a request (desync)", s.id, s.status, s.answer)
		case 5:
		default:
			report("%s: status %d is neither 2xx nor an error", s.id, s.status)
		}
	}
	rw.codes[out]++
}

// answered: the 2xx names an execution of s with its whole body and
// answers s's id.
func answered(s *sent, execs []execution) bool {
	for _, e := range execs {
		if e.Seq == s.exec && e.Len == s.c.size && e.Sum == s.sum {
			return s.answer == "ok "+s.id
		}
	}
	return false
}

// table renders the rows.
func table(rows []row) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ROUTE\tSCENARIO\tSENT\tEXECUTED\t2XX\tERRORS\tDUPLICATES\tTRUNCATED\tSMUGGLED\t2XX-UNMATCHED\tAPP KILLS/IDLE-CLOSES/ABORTED")
	for _, r := range rows {
		errs := "-"
		if len(r.codes) > 0 {
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(r.codes)) {
				parts = append(parts, fmt.Sprintf("%s:%d", k, r.codes[k]))
			}
			errs = strings.Join(parts, " ")
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%s\n", r.route, r.scenario, r.sent, r.executed, r.ok, errs,
			r.duplicates, r.truncated, r.smuggled, r.mismatched, r.app)
	}
	w.Flush()
	return b.String()
}
