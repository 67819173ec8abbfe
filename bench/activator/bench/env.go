package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// env is one benchmark run: the built binaries, the processes started,
// the next free port.
type env struct {
	ctx   context.Context
	dir   string
	bin   map[string]string
	procs []*proc
	port  int
}

// proc is a process this run started.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *bufio.Scanner // stdout lines, when asked for
}

func getenv(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func envInt(k string, def int) int {
	n, err := strconv.Atoi(getenv(k, strconv.Itoa(def)))
	if err != nil {
		return def
	}
	return n
}

func envDuration(k string, def time.Duration) time.Duration {
	d, err := time.ParseDuration(getenv(k, def.String()))
	if err != nil {
		return def
	}
	return d
}

func lookPath(name string) (string, error) { return exec.LookPath(name) }

// newEnv builds the binaries into a temporary directory.
func newEnv(ctx context.Context) (*env, error) {
	dir, err := os.MkdirTemp("", "ebb-bench-activator-")
	if err != nil {
		return nil, err
	}
	e := &env{ctx: ctx, dir: dir, bin: map[string]string{}, port: envInt("BASE_PORT", 18200)}
	builds := []struct{ name, pkg, tags string }{
		{"activator", "./cmd/activator", ""},
		{"activator-nok8s", "./cmd/activator", "nokubernetes"},
		{"app", "./bench/activator/app", ""},
		{"baseline", "./bench/queueproxy/baseline", ""},
		{"queueproxy", "./cmd/queueproxy", ""},
	}
	fmt.Println("building into", dir)
	for _, b := range builds {
		path := filepath.Join(dir, b.name)
		args := []string{"build", "-o", path}
		if b.tags != "" {
			args = append(args, "-tags", b.tags)
		}
		if out, err := exec.CommandContext(ctx, "go", append(args, b.pkg)...).CombinedOutput(); err != nil {
			e.cleanup()
			return nil, fmt.Errorf("building %s: %v\n%s", b.pkg, err, out)
		}
		e.bin[b.name] = path
	}
	if ref := os.Getenv("BASELINE_REF"); ref != "" {
		hash, err := buildRef(ctx, e, ref)
		if err != nil {
			e.cleanup()
			return nil, err
		}
		fmt.Printf("built the activator and the queue-proxy of BASELINE_REF=%s (%s)\n", ref, hash)
	}
	return e, nil
}

func (e *env) cleanup() {
	for _, p := range e.procs {
		p.stop()
	}
	os.RemoveAll(e.dir)
}

// addr returns a fresh 127.0.0.1 address.
func (e *env) addr() string {
	e.port++
	return fmt.Sprintf("127.0.0.1:%d", e.port)
}

// start runs a binary; withOut captures its stdout lines.
func (e *env) start(name string, envs []string, withOut bool, args ...string) (*proc, error) {
	cmd := exec.Command(e.bin[name], args...)
	cmd.Env = append(os.Environ(), envs...)
	log, err := os.Create(filepath.Join(e.dir, fmt.Sprintf("%s-%d.log", name, len(e.procs))))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = log
	p := &proc{name: name, cmd: cmd}
	if withOut {
		r, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		p.out = bufio.NewScanner(r)
	} else {
		cmd.Stdout = log
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	e.procs = append(e.procs, p)
	return p, nil
}

// stop ends the process (SIGTERM, then SIGKILL after 5s) and reaps it.
func (p *proc) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// cpuSeconds is the process's user+system CPU time so far.
func (p *proc) cpuSeconds() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid()))
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseFloat(fields[11], 64)
	st, _ := strconv.ParseFloat(fields[12], 64)
	return (ut + st) / 100 // USER_HZ is 100 on Linux
}

// memKiB reads a field of /proc/PID/status (VmRSS, VmHWM) in KiB.
func (p *proc) memKiB(field string) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid()))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

// waitHTTP polls url (with headers) until it answers want, for up to 10s.
func waitHTTP(url string, want int, headers ...string) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI(url)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		err := fasthttp.DoTimeout(req, resp, time.Second)
		code := resp.StatusCode()
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
		if err == nil && code == want {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s never answered %d", url, want)
}

// revision is one entry of the activator's revisions file.
type revision struct {
	name, replica string
	ready         bool
	cc            int
	timeout       string
}

func (e *env) writeRevisions(path string, revs ...revision) error {
	var b strings.Builder
	b.WriteString(`{"revisions":[`)
	for i, r := range revs {
		if i > 0 {
			b.WriteString(",")
		}
		timeout := r.timeout
		if timeout == "" {
			timeout = "300s"
		}
		fmt.Fprintf(&b, `{"namespace":"default","name":%q,"containerConcurrency":%d,"timeout":%q`, r.name, r.cc, timeout)
		if r.replica != "" {
			fmt.Fprintf(&b, `,"replicas":[{"address":%q,"ready":%v}]`, r.replica, r.ready)
		}
		b.WriteString("}")
	}
	b.WriteString("]}")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// startActivator starts the activator on a revisions file and waits until
// it is ready. It returns the proxy and admin addresses.
func (e *env) startActivator(revsFile string, extra ...string) (*proc, string, string, error) {
	return e.startActivatorBin("activator", revsFile, extra...)
}

// startActivatorBin is startActivator with a choice of build.
func (e *env) startActivatorBin(bin, revsFile string, extra ...string) (*proc, string, string, error) {
	addr, admin := e.addr(), e.addr()
	args := append([]string{"--revisions-file", revsFile, "--address", addr, "--admin-address", admin,
		"--log-level", "warn", "--revisions-poll", "1h", "--pod-name", "bench"}, extra...)
	p, err := e.start(bin, nil, false, args...)
	if err != nil {
		return nil, "", "", err
	}
	return p, addr, admin, waitHTTP("http://"+admin+"/readyz", 200)
}

// startQueueProxy starts a queue-proxy in front of the app at appAddr.
func (e *env) startQueueProxy(appAddr string, cc int) (*proc, string, error) {
	return e.startQueueProxyCC(e.addr(), appAddr, cc)
}

// startQueueProxyAt starts a queue-proxy serving on addr.
func (e *env) startQueueProxyAt(addr, appAddr string) (*proc, string, error) {
	return e.startQueueProxyCC(addr, appAddr, 0)
}

// reloadSignal makes the activator re-read its revisions file.
const reloadSignal = syscall.SIGHUP

func (e *env) startQueueProxyCC(addr, appAddr string, cc int) (*proc, string, error) {
	return e.startQueueProxyBin("queueproxy", addr, appAddr, cc)
}

// startQueueProxyBin is startQueueProxyCC with a choice of build.
func (e *env) startQueueProxyBin(bin, addr, appAddr string, cc int) (*proc, string, error) {
	admin := e.addr()
	port := func(a string) string { return a[strings.LastIndexByte(a, ':')+1:] }
	p, err := e.start(bin, []string{
		"QUEUE_SERVING_PORT=" + port(addr), "QUEUE_ADMIN_PORT=" + port(admin), "USER_PORT=" + port(appAddr),
		"CONTAINER_CONCURRENCY=" + strconv.Itoa(cc), "LOG_LEVEL=warn", "DRAIN_PERIOD_SECONDS=0",
	}, false)
	return p, addr, err
}
