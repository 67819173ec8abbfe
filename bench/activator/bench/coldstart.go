package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// Targets: the first request's latency beyond the app's start-up, and the
// time from the app's readiness to the answer through the activator alone.
const (
	targetColdOverhead = 50 * time.Millisecond
	targetReadyToResp  = 5 * time.Millisecond
)

// coldRun is one cold start: the first request's latency minus the app's
// start-up time, and the time from the app's readiness (its own
// timestamp) to the response.
type coldRun struct {
	overhead, readyToResponse time.Duration
}

// coldStart measures COLD_RUNS cold starts per path: a request waits in
// the activator for a revision at zero; the replica starts (the app alone,
// or a queue-proxy and the app) and becomes ready READY_AFTER later; the
// request's completion is timed.
func coldStart(ctx context.Context, e *env) error {
	runs, readyAfter := envInt("COLD_RUNS", 20), envDuration("READY_AFTER", 500*time.Millisecond)
	revs := filepath.Join(e.dir, "cold.json")
	if err := e.writeRevisions(revs); err != nil {
		return err
	}
	act, actAddr, admin, err := e.startActivator(revs)
	if err != nil {
		return err
	}
	results := map[string][]coldRun{}
	var names []revision
	for i := range runs {
		for _, withQP := range []bool{false, true} {
			path := "activator -> app"
			if withQP {
				path = "activator -> queue-proxy -> app"
			}
			r, err := coldOnce(ctx, e, act, actAddr, admin, revs, &names, withQP, readyAfter)
			if err != nil {
				return fmt.Errorf("cold start %d (%s): %w", i, path, err)
			}
			results[path] = append(results[path], r)
		}
	}
	fmt.Printf("\ncold start, %d runs per path, app ready %v after start:\n", runs, readyAfter)
	fmt.Printf("%-34s %12s %12s %12s %14s\n", "path", "median ms", "p90 ms", "max ms", "ready->resp ms")
	for _, path := range []string{"activator -> app", "activator -> queue-proxy -> app"} {
		o, rr := overheads(results[path])
		check := "ok"
		if o[len(o)/2] > targetColdOverhead {
			check = "MISSED"
		}
		fmt.Printf("%-34s %12s %12s %12s %14s  (first-request latency - %v; target median <= %v) %s\n", path,
			ms(o[len(o)/2]), ms(o[len(o)*9/10]), ms(o[len(o)-1]), ms(rr[len(rr)/2]), readyAfter, targetColdOverhead, check)
		if path == "activator -> app" {
			check = "ok"
			if rr[len(rr)/2] > targetReadyToResp {
				check = "MISSED"
			}
			fmt.Printf("%-34s median app-ready -> answer %s ms (target <= %v) %s\n", "", ms(rr[len(rr)/2]), targetReadyToResp, check)
		}
	}
	return nil
}

func overheads(rs []coldRun) (o, rr []time.Duration) {
	for _, r := range rs {
		o, rr = append(o, r.overhead), append(rr, r.readyToResponse)
	}
	slices.Sort(o)
	slices.Sort(rr)
	return o, rr
}

// coldOnce adds a revision whose only replica is not started yet, queues
// one request for it, starts the replica and times the response.
func coldOnce(ctx context.Context, e *env, act *proc, actAddr, admin, revsFile string, revs *[]revision,
	withQP bool, readyAfter time.Duration) (coldRun, error) {
	appAddr := e.addr()
	replica := appAddr
	var qpAddr string
	if withQP {
		qpAddr = e.addr()
		replica = qpAddr
	}
	for i := range *revs {
		(*revs)[i].replica = "" // older revisions are at zero for good: nothing to probe
	}
	name := fmt.Sprintf("cold-%d", len(*revs))
	*revs = append(*revs, revision{name: name, replica: replica, timeout: "30s"})
	if err := e.writeRevisions(revsFile, *revs...); err != nil {
		return coldRun{}, err
	}
	act.cmd.Process.Signal(reloadSignal)
	if err := waitMetric(admin, "ebb_activator_revisions", len(*revs)); err != nil {
		return coldRun{}, err
	}
	done := make(chan error, 1)
	go func() { done <- firstRequest(actAddr, name) }()
	if err := waitMetric(admin, "ebb_activator_queued_requests", 1); err != nil {
		return coldRun{}, err
	}
	start := time.Now()
	app, err := e.start("app", nil, true, "--addr", appAddr, "--ready-after", readyAfter.String())
	if err != nil {
		return coldRun{}, err
	}
	defer app.stop()
	if withQP {
		qp, _, err := e.startQueueProxyAt(qpAddr, appAddr)
		if err != nil {
			return coldRun{}, err
		}
		defer qp.stop()
	}
	ready, err := readyTime(app)
	if err != nil {
		return coldRun{}, err
	}
	if err := <-done; err != nil {
		return coldRun{}, err
	}
	end := time.Now()
	return coldRun{overhead: end.Sub(start) - readyAfter, readyToResponse: end.Sub(ready)}, nil
}

func firstRequest(actAddr, name string) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + actAddr + "/")
	req.UseHostHeader = true
	req.Header.SetHost(name + ".default")
	if err := fasthttp.DoTimeout(req, resp, 30*time.Second); err != nil {
		return err
	}
	if resp.StatusCode() != 200 {
		return fmt.Errorf("status %d: %s", resp.StatusCode(), resp.Body())
	}
	return nil
}

// readyTime reads the app's "ready <unix ns>" line.
func readyTime(app *proc) (time.Time, error) {
	for app.out.Scan() {
		if v, ok := strings.CutPrefix(app.out.Text(), "ready "); ok {
			ns, err := strconv.ParseInt(v, 10, 64)
			return time.Unix(0, ns), err
		}
	}
	return time.Time{}, fmt.Errorf("the app exited before it was ready")
}

// waitMetric polls the activator's /metrics until name has value want.
func waitMetric(admin, name string, want int) error {
	line := fmt.Sprintf("\n%s %d\n", name, want)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		_, body, err := fasthttp.GetTimeout(nil, "http://"+admin+"/metrics", time.Second)
		if err == nil && strings.Contains(string(body), line) {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("metric %s never reached %d", name, want)
}
