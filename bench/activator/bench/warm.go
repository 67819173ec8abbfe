package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"ebb.dev/ebb/bench/internal/paired"
)

// Knative's activator handler chain on this machine class with
// wrk -t2 -c50, and the bare fasthttp proxy measured beside it (the
// issue's reference numbers).
const (
	knativeRPS      = 13300
	knativeBareRPS  = 33900
	targetRatio     = 0.95 // of the bare proxy, same run
	targetChain     = 0.70 // activator + queue-proxy, of the bare proxy, same run
	targetCPUUs     = 35
	targetAddedP50  = 120 * time.Microsecond
	targetIdleMiB   = 25
	targetPeakMiB   = 35
	oneClientTarget = "wrk-c1"
)

type target struct {
	name, url, host string
	ps              []*proc // whose CPU is measured, summed
}

// warmSetup starts the app, the bare proxy, a second bare proxy in front
// of the first (two bare hops), a queue-proxy and one activator serving
// two revisions: warm (the app) and full (the queue-proxy in front of
// the app).
func warmSetup(e *env) ([]target, *proc, error) {
	appAddr, blAddr, bl2Addr := e.addr(), e.addr(), e.addr()
	app, err := e.start("app", nil, false, "--addr", appAddr)
	if err != nil {
		return nil, nil, err
	}
	bystander = app
	bl, err := e.start("baseline", nil, false, "-listen", blAddr, "-upstream", appAddr)
	if err != nil {
		return nil, nil, err
	}
	bl2, err := e.start("baseline", nil, false, "-listen", bl2Addr, "-upstream", blAddr)
	if err != nil {
		return nil, nil, err
	}
	qp, qpAddr, err := e.startQueueProxy(appAddr, 0)
	if err != nil {
		return nil, nil, err
	}
	for _, a := range []string{appAddr, blAddr, bl2Addr, qpAddr} {
		if err := waitHTTP("http://"+a+"/", 200); err != nil {
			return nil, nil, err
		}
	}
	revs := filepath.Join(e.dir, "warm.json")
	if err := e.writeRevisions(revs, revision{name: "warm", replica: appAddr, ready: true},
		revision{name: "full", replica: qpAddr, ready: true}); err != nil {
		return nil, nil, err
	}
	act, actAddr, _, err := e.startActivator(revs)
	if err != nil {
		return nil, nil, err
	}
	targets := []target{
		{name: "direct", url: "http://" + appAddr + "/"},
		{name: "baseline", url: "http://" + blAddr + "/", ps: []*proc{bl}},
		{name: "activator", url: "http://" + actAddr + "/", host: "warm.default", ps: []*proc{act}},
		{name: "queue-proxy", url: "http://" + qpAddr + "/", ps: []*proc{qp}},
		{name: "activator+qp", url: "http://" + actAddr + "/", host: "full.default", ps: []*proc{act, qp}},
		{name: "bare+bare", url: "http://" + bl2Addr + "/", ps: []*proc{bl2, bl}},
	}
	if _, ok := e.bin["activator"+refSuffix]; ok { // BASELINE_REF: the same hops built from that commit
		refQP, refQPAddr, err := e.startQueueProxyBin("queueproxy"+refSuffix, e.addr(), appAddr, 0)
		if err != nil {
			return nil, nil, err
		}
		if err := waitHTTP("http://"+refQPAddr+"/", 200); err != nil {
			return nil, nil, err
		}
		refRevs := filepath.Join(e.dir, "warm-ref.json")
		if err := e.writeRevisions(refRevs, revision{name: "warm", replica: appAddr, ready: true},
			revision{name: "full", replica: refQPAddr, ready: true}); err != nil {
			return nil, nil, err
		}
		refAct, refActAddr, _, err := e.startActivatorBin("activator"+refSuffix, refRevs)
		if err != nil {
			return nil, nil, err
		}
		targets = append(targets,
			target{name: "activator" + refSuffix, url: "http://" + refActAddr + "/", host: "warm.default", ps: []*proc{refAct}},
			target{name: "queue-proxy" + refSuffix, url: "http://" + refQPAddr + "/", ps: []*proc{refQP}},
			target{name: "activator+qp" + refSuffix, url: "http://" + refActAddr + "/", host: "full.default",
				ps: []*proc{refAct, refQP}})
	}
	return targets, act, nil
}

func warm(ctx context.Context, e *env) error {
	rounds, d, conns := envInt("ROUNDS", 8), envDuration("DURATION", 5*time.Second), envInt("CONNS", 50)
	slice := envDuration("SLICE", time.Second)
	nSlices := max(int(d/slice), 1)
	targets, act, err := warmSetup(e)
	if err != nil {
		return err
	}
	lean, err := idleRSS(e)
	if err != nil {
		return err
	}
	idle := rss{act.memKiB("VmRSS"), act.memKiB("RssAnon")}
	runs := map[string][]result{} // "test|target"
	var samples []paired.Sample
	sliced, names := targets[1:], make([]string, 0, len(targets)-1) // all but the app alone
	for _, t := range sliced {
		names = append(names, t.name)
	}
	byName := map[string]target{}
	for _, t := range targets {
		byName[t.name] = t
	}
	for r := 1; r <= rounds; r++ {
		fmt.Printf("round %d/%d: wrk -t2 -c%d, %d slices of %v each target (order rotating), then wrk -t1 -c1 -d%v\n",
			r, rounds, conns, nSlices, slice, d)
		direct, err := wrk(ctx, targets[0].url, targets[0].host, 2, conns, slice)
		if err != nil {
			return err
		}
		runs["wrk|direct"] = append(runs["wrk|direct"], direct)
		for s := range nSlices {
			for _, name := range paired.Order(names, r, s) {
				t := byName[name]
				res, err := wrk(ctx, t.url, t.host, 2, conns, slice, t.ps...)
				if err != nil {
					return err
				}
				runs["wrk|"+t.name] = append(runs["wrk|"+t.name], res)
				samples = append(samples, paired.Sample{Test: "wrk", Target: t.name, Round: r, Slice: s, RPS: res.rps,
					Requests: res.requests, CPUSeconds: res.cpuUs * res.requests / 1e6})
			}
		}
		for _, t := range targets {
			res, err := wrk(ctx, t.url, t.host, 1, 1, d, t.ps...)
			if err != nil {
				return err
			}
			runs[oneClientTarget+"|"+t.name] = append(runs[oneClientTarget+"|"+t.name], res)
		}
	}
	printWarm(targets, runs, samples, idle, lean, act.memKiB("VmHWM"))
	return nil
}

// rss is a resident set and its anonymous part, KiB.
type rss struct{ total, anon int }

// idleRSS is the idle memory of the build without Kubernetes (-tags
// nokubernetes), on the same revisions.
func idleRSS(e *env) (rss, error) {
	revs := filepath.Join(e.dir, "warm.json")
	p, _, _, err := e.startActivatorBin("activator-nok8s", revs)
	if err != nil {
		return rss{}, err
	}
	defer p.stop()
	time.Sleep(time.Second)
	return rss{p.memKiB("VmRSS"), p.memKiB("RssAnon")}, nil
}

// mean is the mean of runs; CPU per request over all their requests.
func mean(rs []result) result {
	var m result
	var cpu float64
	for _, r := range rs {
		m.rps += r.rps / float64(len(rs))
		m.p50 += r.p50 / time.Duration(len(rs))
		m.p99 += r.p99 / time.Duration(len(rs))
		m.requests += r.requests
		m.rest = m.rest.plus(r.rest)
		cpu += r.cpuUs * r.requests
	}
	if m.requests > 0 {
		m.cpuUs = cpu / m.requests
	}
	return m
}

func printWarm(targets []target, runs map[string][]result, samples []paired.Sample, idle, lean rss, peakKiB int) {
	fmt.Printf("\nmeans over the runs (the sliced targets over all slices), same run:\n")
	fmt.Printf("%-8s %-14s %10s %9s %9s %12s\n", "tool", "target", "req/s", "p50 ms", "p99 ms", "cpu us/req")
	for _, test := range []string{"wrk", oneClientTarget} {
		for _, t := range targets {
			m := mean(runs[test+"|"+t.name])
			cpu := "-"
			if len(t.ps) > 0 {
				cpu = fmt.Sprintf("%.1f", m.cpuUs)
			}
			fmt.Printf("%-8s %-14s %10.0f %9s %9s %12s\n", test, t.name, m.rps, ms(m.p50), ms(m.p99), cpu)
		}
	}
	printRest(targets, runs)
	w := func(name string) result { return mean(runs["wrk|"+name]) }
	c := func(name string) result { return mean(runs[oneClientTarget+"|"+name]) }
	vs := func(num, den string) paired.Comparison { return paired.Compare(samples, "wrk", num, den) }
	one, chain, qp := vs("activator", "baseline"), vs("activator+qp", "baseline"), vs("queue-proxy", "baseline")
	added := c("activator").p50 - c("direct").p50
	check := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "MISSED"
	}
	fmt.Printf("\nwarm path (wrk -c50; throughput: median of the slices' ratios, the middle half of them, each round's median):\n")
	fmt.Printf("  throughput activator/bare proxy      %s  target >= %.2f: %s\n", one.Throughput(), targetRatio,
		check(one.Median >= targetRatio))
	fmt.Printf("  throughput activator/Knative (%d) %.2f   (target >= 2; the bare proxy here/%d = %.2f)\n",
		knativeRPS, w("activator").rps/knativeRPS, knativeBareRPS, w("baseline").rps/knativeBareRPS)
	fmt.Printf("  activator CPU per request            %.1f us (target <= %d)  %s  [%s x the bare proxy's %.1f us]\n",
		w("activator").cpuUs, targetCPUUs, check(w("activator").cpuUs <= targetCPUUs), one.CPUPerRequest(), w("baseline").cpuUs)
	fmt.Printf("  added p50, one client                %.3f ms (target <= %.2f)  %s\n", float64(added)/1e6, float64(targetAddedP50)/1e6, check(added <= targetAddedP50))
	fmt.Printf("  added p50, one client, over the bare proxy %.3f ms (the bare proxy itself adds %.3f ms over the app)\n",
		float64(c("activator").p50-c("baseline").p50)/1e6, float64(c("baseline").p50-c("direct").p50)/1e6)
	mib := func(kib int) float64 { return float64(kib) / 1024 }
	fmt.Printf("  activator RSS idle / peak            %.1f / %.1f MiB (targets %d / %d)  %s  [default build, with the lean Kubernetes source; anonymous %.1f MiB at idle]\n",
		mib(idle.total), mib(peakKiB), targetIdleMiB, targetPeakMiB,
		check(idle.total <= targetIdleMiB*1024 && peakKiB <= targetPeakMiB*1024), mib(idle.anon))
	fmt.Printf("  activator RSS idle, -tags nokubernetes %.1f MiB (target %d)  %s  [anonymous %.1f MiB]\n",
		mib(lean.total), targetIdleMiB, check(lean.total <= targetIdleMiB*1024), mib(lean.anon))
	if ref := os.Getenv("BASELINE_REF"); ref != "" {
		fmt.Printf("this tree against BASELINE_REF=%s (same slices, rotating):\n", ref)
		for _, name := range []string{"activator", "queue-proxy", "activator+qp"} {
			now, then := vs(name, name+refSuffix), vs(name+refSuffix, "baseline")
			fmt.Printf("  %-12s throughput %s, CPU per request %s (%.1f vs %.1f us); BASELINE_REF/bare proxy %.2f, CPU %.2f; "+
				"p50 one client %.3f vs %.3f ms\n", name, now.Throughput(), now.CPUPerRequest(), w(name).cpuUs, w(name+refSuffix).cpuUs,
				then.Median, then.CPU, float64(c(name).p50)/1e6, float64(c(name+refSuffix).p50)/1e6)
		}
	}
	bare2 := vs("bare+bare", "baseline")
	fmt.Printf("full warm path (activator -> queue-proxy -> app), against the one bare proxy (CPU: its two hops summed):\n")
	fmt.Printf("  throughput / bare proxy %s  target >= %.2f: %s; CPU per request %s\n", chain.Throughput(), targetChain,
		check(chain.Median >= targetChain), chain.CPUPerRequest())
	fmt.Printf("  %.0f req/s = %.2f x the queue-proxy alone; added p50 one client %.3f ms over the queue-proxy\n",
		w("activator+qp").rps, vs("activator+qp", "queue-proxy").Median, float64(c("activator+qp").p50-c("queue-proxy").p50)/1e6)
	fmt.Printf("  for scale, two bare proxies in a chain (bare+bare) / one bare proxy: %s, CPU per request %s; "+
		"the chain / bare+bare: %.2f\n", bare2.Throughput(), bare2.CPUPerRequest(), vs("activator+qp", "bare+bare").Median)
	fmt.Printf("queue-proxy (its own bench is make bench-queueproxy): throughput %s, CPU per request %s of the bare proxy's\n",
		qp.Throughput(), qp.CPUPerRequest())
}

// printRest prints what every request of the wrk -c50 runs cost the
// whole machine, part by part: the target's own processes, the app, wrk
// itself, the CPUs' idle time, and all of it (the run's wall time on
// every CPU). A chain's ratio to the bare proxy is the ratio of the
// last column, the other way round; the columns say which part moved.
func printRest(targets []target, runs map[string][]result) {
	fmt.Printf("\nwhat a request costs the machine (wrk -c50, all slices; us; other processes make up the rest):\n")
	fmt.Printf("%-16s %8s %8s %8s %8s %8s\n", "target", "proxies", "app", "wrk", "idle", "machine")
	for _, t := range targets {
		m := mean(runs["wrk|"+t.name])
		if m.requests == 0 {
			continue
		}
		per := func(s float64) string { return fmt.Sprintf("%.1f", s/m.requests*1e6) }
		proxies := "-"
		if len(t.ps) > 0 {
			proxies = fmt.Sprintf("%.1f", m.cpuUs)
		}
		fmt.Printf("%-16s %8s %8s %8s %8s %8s\n", t.name, proxies, per(m.rest.app), per(m.rest.tool),
			per(m.rest.idle), per(m.rest.total))
	}
}
