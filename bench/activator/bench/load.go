package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// result is one load run.
type result struct {
	rps      float64
	p50, p99 time.Duration
	requests float64
	cpuUs    float64 // CPU of the measured process per request, microseconds
	rest     rest    // the rest of the machine over the same run
	codes    map[int]int
	errors   int
	errLines []string // hey's error distribution
	slowest  time.Duration
}

// wrk runs wrk against url with a Host header; ps are the processes whose
// CPU is measured, summed (none: no CPU).
func wrk(ctx context.Context, url, host string, threads, conns int, d time.Duration, ps ...*proc) (result, error) {
	args := []string{fmt.Sprintf("-t%d", threads), fmt.Sprintf("-c%d", conns), "-d" + d.String(), "--latency"}
	if host != "" {
		args = append(args, "-H", "Host: "+host)
	}
	out, cpu, rest, err := measure(ctx, d+30*time.Second, ps, "wrk", append(args, url)...)
	if err != nil {
		return result{}, err
	}
	r := result{
		rest:     rest,
		rps:      number(out, `Requests/sec:\s+([\d.]+)`),
		requests: number(out, `(\d+) requests in`),
		p50:      wrkDuration(out, `50%`),
		p99:      wrkDuration(out, `99%`),
	}
	if non2xx := number(out, `Non-2xx or 3xx responses: (\d+)`); non2xx > 0 {
		return r, fmt.Errorf("wrk %s: %v non-2xx responses", url, non2xx)
	}
	if r.requests > 0 && len(ps) > 0 {
		r.cpuUs = cpu / r.requests * 1e6
	}
	return r, nil
}

// heyBin is the hey executable: the module's tool (go.mod), built by
// findHey.
var heyBin = "hey"

// findHey builds hey, a tool of this module, with `go tool -n hey`.
func findHey(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, "go", "tool", "-n", "hey").Output()
	if err != nil {
		return fmt.Errorf("building hey with `go tool -n hey`: %w", err)
	}
	heyBin = strings.TrimSpace(string(out))
	return nil
}

// hey runs hey with args (the URL last); p as for wrk.
func hey(ctx context.Context, limit time.Duration, p *proc, args ...string) (result, error) {
	var ps []*proc
	if p != nil {
		ps = append(ps, p)
	}
	out, cpu, _, err := measure(ctx, limit, ps, heyBin, args...)
	if err != nil {
		return result{}, err
	}
	r := result{rps: number(out, `Requests/sec:\s+([\d.]+)`), codes: map[int]int{},
		slowest: time.Duration(number(out, `Slowest:\s+([\d.]+) secs`) * float64(time.Second)),
		p50:     time.Duration(number(out, `50%+ in ([\d.]+) secs`) * float64(time.Second)),
		p99:     time.Duration(number(out, `99%+ in ([\d.]+) secs`) * float64(time.Second)),
	}
	for _, m := range regexp.MustCompile(`\[(\d{3})\]\s+(\d+) responses`).FindAllStringSubmatch(out, -1) {
		code, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		r.codes[code] += n
		r.requests += float64(n)
	}
	if _, errs, ok := strings.Cut(out, "Error distribution:"); ok {
		for _, m := range regexp.MustCompile(`\[(\d+)\]\s*(.*)`).FindAllStringSubmatch(errs, -1) {
			n, _ := strconv.Atoi(m[1])
			r.errors += n
			r.errLines = append(r.errLines, strings.TrimSpace(m[0]))
		}
	}
	if r.requests > 0 && p != nil {
		r.cpuUs = cpu / r.requests * 1e6
	}
	return r, nil
}

// measure runs a load tool, bounded by limit, and the CPU seconds ps
// used meanwhile, summed.
func measure(ctx context.Context, limit time.Duration, ps []*proc, tool string, args ...string) (string, float64, rest, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var c0 float64
	for _, p := range ps {
		c0 += p.cpuSeconds()
	}
	r0 := restNow()
	cmd := exec.CommandContext(ctx, tool, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", 0, rest{}, fmt.Errorf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, out)
	}
	cpu := -c0
	for _, p := range ps {
		cpu += p.cpuSeconds()
	}
	r := restNow().minus(r0)
	r.tool = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	return string(out), cpu, r, nil
}

// bystander is the app of the warm path: every load run also measures
// its CPU (rest).
var bystander *proc

// rest is what the rest of the machine spent over a load run, in CPU
// seconds: the app (bystander), the load tool itself, and the CPUs' idle
// time (/proc/stat's idle and iowait), and the run's length in CPU
// seconds (wall time x CPUs), so that a target's cost per request can be
// set beside everything else's.
type rest struct {
	app, tool, idle, total float64
}

func restNow() rest {
	var r rest
	if bystander != nil {
		r.app = bystander.cpuSeconds()
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return r
	}
	line, _, _ := strings.Cut(string(b), "\n") // cpu user nice system idle iowait irq softirq steal ...
	for i, f := range strings.Fields(line)[1:] {
		v, _ := strconv.ParseFloat(f, 64)
		if i < 8 { // guest time is counted in user time already
			r.total += v / 100 // USER_HZ
		}
		if i == 3 || i == 4 {
			r.idle += v / 100
		}
	}
	return r
}

func (r rest) minus(o rest) rest {
	return rest{app: r.app - o.app, tool: r.tool - o.tool, idle: r.idle - o.idle, total: r.total - o.total}
}

func (r rest) plus(o rest) rest {
	return rest{app: r.app + o.app, tool: r.tool + o.tool, idle: r.idle + o.idle, total: r.total + o.total}
}

func number(out, pattern string) float64 {
	m := regexp.MustCompile(pattern).FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	f, _ := strconv.ParseFloat(m[1], 64)
	return f
}

// wrkDuration reads a latency percentile line such as "50%  812.00us".
func wrkDuration(out, pct string) time.Duration {
	m := regexp.MustCompile(regexp.QuoteMeta(pct) + `\s+([\d.]+)(us|ms|s)`).FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	f, _ := strconv.ParseFloat(m[1], 64)
	unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[m[2]]
	return time.Duration(f * float64(unit))
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) }
