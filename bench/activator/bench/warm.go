package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
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
	p               *proc // whose CPU is measured
}

// warmSetup starts the app, the bare proxy, a queue-proxy and one
// activator serving two revisions: warm (the app) and full (the
// queue-proxy in front of the app).
func warmSetup(e *env) ([]target, *proc, error) {
	appAddr, blAddr := e.addr(), e.addr()
	if _, err := e.start("app", nil, false, "--addr", appAddr); err != nil {
		return nil, nil, err
	}
	bl, err := e.start("baseline", nil, false, "-listen", blAddr, "-upstream", appAddr)
	if err != nil {
		return nil, nil, err
	}
	qp, qpAddr, err := e.startQueueProxy(appAddr, 0)
	if err != nil {
		return nil, nil, err
	}
	for _, a := range []string{appAddr, blAddr, qpAddr} {
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
		{name: "baseline", url: "http://" + blAddr + "/", p: bl},
		{name: "activator", url: "http://" + actAddr + "/", host: "warm.default", p: act},
		{name: "queue-proxy", url: "http://" + qpAddr + "/", p: qp},
		{name: "activator+qp", url: "http://" + actAddr + "/", host: "full.default", p: act},
	}
	if _, ok := e.bin["activator"+refSuffix]; ok { // BASELINE_REF: the same two hops built from that commit
		refAct, refActAddr, _, err := e.startActivatorBin("activator"+refSuffix, revs)
		if err != nil {
			return nil, nil, err
		}
		refQP, refQPAddr, err := e.startQueueProxyBin("queueproxy"+refSuffix, e.addr(), appAddr, 0)
		if err != nil {
			return nil, nil, err
		}
		if err := waitHTTP("http://"+refQPAddr+"/", 200); err != nil {
			return nil, nil, err
		}
		targets = append(targets,
			target{name: "activator" + refSuffix, url: "http://" + refActAddr + "/", host: "warm.default", p: refAct},
			target{name: "queue-proxy" + refSuffix, url: "http://" + refQPAddr + "/", p: refQP})
	}
	return targets, act, nil
}

func warm(ctx context.Context, e *env) error {
	rounds, d, conns := envInt("ROUNDS", 3), envDuration("DURATION", 10*time.Second), envInt("CONNS", 50)
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
	for r := 1; r <= rounds; r++ {
		fmt.Printf("round %d/%d: wrk -t2 -c%d -d%v, then wrk -t1 -c1 -d%v\n", r, rounds, conns, d, d)
		for _, t := range targets {
			res, err := wrk(ctx, t.url, t.host, 2, conns, d, t.p)
			if err != nil {
				return err
			}
			runs["wrk|"+t.name] = append(runs["wrk|"+t.name], res)
		}
		for _, t := range targets {
			res, err := wrk(ctx, t.url, t.host, 1, 1, d, t.p)
			if err != nil {
				return err
			}
			runs[oneClientTarget+"|"+t.name] = append(runs[oneClientTarget+"|"+t.name], res)
		}
	}
	printWarm(targets, runs, idle, lean, act.memKiB("VmHWM"))
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

func mean(rs []result) result {
	var m result
	for _, r := range rs {
		m.rps += r.rps / float64(len(rs))
		m.p50 += r.p50 / time.Duration(len(rs))
		m.p99 += r.p99 / time.Duration(len(rs))
		m.cpuUs += r.cpuUs / float64(len(rs))
	}
	return m
}

func printWarm(targets []target, runs map[string][]result, idle, lean rss, peakKiB int) {
	fmt.Printf("\n%-8s %-14s %10s %9s %9s %12s\n", "tool", "target", "req/s", "p50 ms", "p99 ms", "cpu us/req")
	for _, test := range []string{"wrk", oneClientTarget} {
		for _, t := range targets {
			m := mean(runs[test+"|"+t.name])
			cpu := "-"
			if t.p != nil {
				cpu = fmt.Sprintf("%.1f", m.cpuUs)
			}
			fmt.Printf("%-8s %-14s %10.0f %9s %9s %12s\n", test, t.name, m.rps, ms(m.p50), ms(m.p99), cpu)
		}
	}
	w := func(name string) result { return mean(runs["wrk|"+name]) }
	c := func(name string) result { return mean(runs[oneClientTarget+"|"+name]) }
	ratio := w("activator").rps / w("baseline").rps
	added := c("activator").p50 - c("direct").p50
	check := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "MISSED"
	}
	fmt.Printf("\nwarm path, one hop (mean of rounds, same run):\n")
	fmt.Printf("  throughput activator/bare proxy      %.2f   (target >= %.2f)  %s\n", ratio, targetRatio, check(ratio >= targetRatio))
	fmt.Printf("  throughput activator/Knative (%d) %.2f   (target >= 2; the bare proxy here/%d = %.2f)\n",
		knativeRPS, w("activator").rps/knativeRPS, knativeBareRPS, w("baseline").rps/knativeBareRPS)
	fmt.Printf("  activator CPU per request            %.1f us (target <= %d)  %s  [%.2fx the bare proxy's %.1f us in this run]\n",
		w("activator").cpuUs, targetCPUUs, check(w("activator").cpuUs <= targetCPUUs), w("activator").cpuUs/w("baseline").cpuUs, w("baseline").cpuUs)
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
		fmt.Printf("this tree against BASELINE_REF=%s (same rounds, alternating):\n", ref)
		for _, name := range []string{"activator", "queue-proxy"} {
			now, then := w(name), w(name+refSuffix)
			fmt.Printf("  %-12s throughput %.3fx, CPU per request %.3fx (%.1f vs %.1f us), p50 one client %.3f vs %.3f ms\n",
				name, now.rps/then.rps, now.cpuUs/then.cpuUs, now.cpuUs, then.cpuUs,
				float64(c(name).p50)/1e6, float64(c(name+refSuffix).p50)/1e6)
		}
	}
	fmt.Printf("full warm path (activator -> queue-proxy -> app):\n")
	chain := w("activator+qp").rps / w("baseline").rps
	fmt.Printf("  throughput %.0f req/s = %.2f x the queue-proxy alone, %.2f x the bare proxy (target >= %.2f)  %s; added p50 one client "+
		"%.3f ms over the queue-proxy\n", w("activator+qp").rps, w("activator+qp").rps/w("queue-proxy").rps, chain, targetChain,
		check(chain >= targetChain), float64(c("activator+qp").p50-c("queue-proxy").p50)/1e6)
	qp := w("queue-proxy").rps / w("baseline").rps
	fmt.Printf("queue-proxy (its own bench is make bench-queueproxy): throughput %.2f x the bare proxy, CPU per request %.2f x\n",
		qp, w("queue-proxy").cpuUs/w("baseline").cpuUs)
}
