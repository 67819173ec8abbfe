package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// soakTimeout is the revision's request timeout in the soak: no request
// may take longer (hey gives up at soakTimeout + 5s and reports it).
const soakTimeout = 10 * time.Second

// soak drives a revision with containerConcurrency 2, one replica and a
// 1 s app with hey -c 200 for SOAK_DURATION, then (SOAK_HEAVY) with 2000
// clients POSTing 60 KiB bodies at one request per second each (past the
// per-revision queue bound of 1000), sampling the activator's RSS every
// 100ms and checking that every request got an answer in time and every
// refusal a body.
func soak(ctx context.Context, e *env) error {
	d, heavy := envDuration("SOAK_DURATION", 5*time.Minute), envDuration("SOAK_HEAVY", 60*time.Second)
	ceiling := envInt("RSS_CEILING_MIB", 100)
	appAddr := e.addr()
	if _, err := e.start("app", nil, false, "--addr", appAddr, "--sleep", "1s"); err != nil {
		return err
	}
	if err := waitHTTP("http://"+appAddr+"/", 200, "K-Network-Probe", "queue"); err != nil {
		return err
	}
	revs := filepath.Join(e.dir, "soak.json")
	if err := e.writeRevisions(revs, revision{name: "soak", replica: appAddr, ready: true, cc: 2, timeout: soakTimeout.String()}); err != nil {
		return err
	}
	act, actAddr, _, err := e.startActivator(revs)
	if err != nil {
		return err
	}
	body := filepath.Join(e.dir, "body")
	if err := os.WriteFile(body, []byte(strings.Repeat("x", 60<<10)), 0o600); err != nil {
		return err
	}
	phases := []struct {
		name string
		d    time.Duration
		args []string
	}{
		{"hey -c 200 GET", d, []string{"-c", "200"}},
		{"hey -c 2000 -q 1 POST 60KiB", heavy, []string{"-c", "2000", "-q", "1", "-m", "POST", "-D", body}},
	}
	fmt.Printf("\noverload soak: containerConcurrency 2, one replica, 1 s app, request timeout %v\n", soakTimeout)
	fmt.Printf("%-24s %8s %9s %7s %7s %7s %7s %10s %12s %12s\n", "phase", "time", "requests", "200", "503", "504", "other", "slowest s", "RSS max MiB", "bad answers")
	var failed []string
	for _, ph := range phases {
		if ph.d <= 0 {
			continue
		}
		fmt.Printf("  running %s for %v\n", ph.name, ph.d)
		res, maxRSS, bad, err := soakPhase(ctx, act, actAddr, ph.d, ph.args)
		if err != nil {
			return err
		}
		other := int(res.requests) - res.codes[200] - res.codes[503] - res.codes[504] + res.errors
		fmt.Printf("%-24s %8v %9.0f %7d %7d %7d %7d %10.2f %12.1f %12d\n", ph.name, ph.d, res.requests+float64(res.errors),
			res.codes[200], res.codes[503], res.codes[504], other, res.slowest.Seconds(), float64(maxRSS)/1024, bad)
		if other > 0 {
			fmt.Printf("    status codes: %v, hey errors: %d\n", res.codes, res.errors)
		}
		for _, l := range res.errLines {
			fmt.Printf("    hey error: %s\n", l)
		}
		if other > 0 || bad > 0 || res.slowest > soakTimeout+2*time.Second || maxRSS > ceiling*1024 {
			failed = append(failed, ph.name)
		}
	}
	if len(failed) > 0 {
		fmt.Printf("soak MISSED in %v: see the columns (ceiling %d MiB, every answer 200/503/504 with a body, none after %v)\n", failed, ceiling, soakTimeout)
	} else {
		fmt.Printf("soak ok: RSS under the %d MiB ceiling throughout, every request answered 200, 503 or 504 (with a body) within %v\n", ceiling, soakTimeout)
	}
	return nil
}

// soakPhase runs one hey load while sampling RSS and checking answers.
func soakPhase(ctx context.Context, act *proc, actAddr string, d time.Duration, args []string) (result, int, int, error) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var maxRSS, bad int
	wg.Go(func() { maxRSS = sampleRSS(act, stop) })
	wg.Go(func() { bad = checkAnswers(actAddr, stop) })
	hargs := append([]string{"-z", d.String(), "-t", fmt.Sprint(int((soakTimeout + 5*time.Second).Seconds())),
		"-host", "soak.default"}, args...)
	res, err := hey(ctx, d+time.Minute, act, append(hargs, "http://"+actAddr+"/")...)
	close(stop)
	wg.Wait()
	return res, maxRSS, bad, err
}

func sampleRSS(p *proc, stop <-chan struct{}) int {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	peak := 0
	for {
		peak = max(peak, p.memKiB("VmRSS"))
		select {
		case <-stop:
			return peak
		case <-t.C:
		}
	}
}

// checkAnswers sends a request every 500ms beside the load and counts the
// answers that break the rules: not 200/503/504, a refusal without a
// body, or later than the timeout.
func checkAnswers(actAddr string, stop <-chan struct{}) int {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	bad := 0
	for {
		select {
		case <-stop:
			return bad
		case <-t.C:
		}
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI("http://" + actAddr + "/")
		req.UseHostHeader = true
		req.Header.SetHost("soak.default")
		start := time.Now()
		err := fasthttp.DoTimeout(req, resp, soakTimeout+5*time.Second)
		code, n, took := resp.StatusCode(), len(resp.Body()), time.Since(start)
		if err != nil || took > soakTimeout+2*time.Second || !(code == 200 || (code == 503 || code == 504) && n > 0) {
			bad++
			fmt.Printf("    bad answer: %v status %d, %d bytes, after %v\n", err, code, n, took)
		}
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
	}
}
