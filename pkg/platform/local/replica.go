package local

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/proxy/proxycore"
	"ebb.dev/ebb/pkg/stats"
)

// replica is one process pair: the app and its queue-proxy. Its goroutine
// (run) owns the processes; ready and stopping are read by others.
type replica struct {
	name    string
	serving int // queue-proxy serving port
	admin   int // queue-proxy admin port (stats)
	app     int // app port
	started time.Time

	ready      atomic.Bool
	readySince atomic.Int64 // unix nanoseconds of the last change of ready; 0 before the first
	appPid     atomic.Int64 // the app's process id once started; 0 before
	usage      usageSampler
	stopping   atomic.Bool
	stop       chan struct{} // closed to ask for an orderly stop
	done       chan struct{} // closed when both processes are gone
	crashed    atomic.Bool   // a process exited on its own
}

// freePorts returns n distinct free loopback ports.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func newReplica(name string, now time.Time) (*replica, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	return &replica{name: name, serving: ports[0], admin: ports[1], app: ports[2], started: now,
		stop: make(chan struct{}), done: make(chan struct{})}, nil
}

// setReady sets ready and, when it changes, when it did.
func (r *replica) setReady(v bool) {
	if r.ready.Swap(v) != v {
		r.readySince.Store(time.Now().UnixNano())
	}
}

func (r *replica) servingAddr() string { return "127.0.0.1:" + strconv.Itoa(r.serving) }
func (r *replica) adminAddr() string   { return "127.0.0.1:" + strconv.Itoa(r.admin) }

// command builds a child process in its own process group that dies with
// the autoscaler, logging to a file.
func command(argv []string, dir string, env []string, logFile *os.File) *exec.Cmd {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// start starts the app, then the queue-proxy.
func (p *Platform) startProcesses(spec revSpec, r *replica) (app, qp *exec.Cmd, err error) {
	if err := os.MkdirAll(p.o.LogDir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("creating the log directory: %w", err)
	}
	appLog, err := os.Create(filepath.Join(p.o.LogDir, r.name+".app.log"))
	if err != nil {
		return nil, nil, fmt.Errorf("creating the app log: %w", err)
	}
	defer appLog.Close() // the child has its own descriptor
	qpLog, err := os.Create(filepath.Join(p.o.LogDir, r.name+".queueproxy.log"))
	if err != nil {
		return nil, nil, fmt.Errorf("creating the queue-proxy log: %w", err)
	}
	defer qpLog.Close()
	app = command(spec.argv, spec.dir, append(spec.env, config.EnvPort+"="+strconv.Itoa(r.app)), appLog)
	if err := app.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting %q: %w", spec.argv[0], err)
	}
	qp = command([]string{p.o.QueueProxy}, spec.dir, p.queueProxyEnv(spec, r), qpLog)
	if err := qp.Start(); err != nil {
		killGroup(app)
		app.Wait()
		return nil, nil, fmt.Errorf("starting the queue-proxy %q: %w", p.o.QueueProxy, err)
	}
	return app, qp, nil
}

func (p *Platform) queueProxyEnv(spec revSpec, r *replica) []string {
	return append([]string{
		config.EnvQueueServingPort + "=" + strconv.Itoa(r.serving),
		config.EnvQueueAdminPort + "=" + strconv.Itoa(r.admin),
		config.EnvUserPort + "=" + strconv.Itoa(r.app),
		config.EnvContainerConcurrency + "=" + strconv.Itoa(spec.concurrency),
		config.EnvServingPod + "=" + r.name,
		config.EnvServingNamespace + "=" + spec.names.Namespace,
		config.EnvServingRevision + "=" + spec.names.Revision,
		config.EnvServingConfiguration + "=" + spec.names.Configuration,
		config.EnvServingService + "=" + servingService(spec.names),
		config.EnvReadinessProbePath + "=" + spec.probePath,
		config.EnvUpstreamProtocol + "=" + spec.upstream,
		config.EnvDrainPeriod + "=" + strconv.FormatFloat(p.o.DrainPeriod.Seconds(), 'f', -1, 64),
		config.EnvQueueBindAddress + "=127.0.0.1",                                                    // only this machine's activator and autoscaler reach a replica
		stats.ProxySecretEnv + "=" + stats.NamespaceProxySecret(p.o.ProxySecret, spec.key.Namespace), // its namespace's
	}, spec.timeoutEnv()...)
}

func killGroup(c *exec.Cmd) {
	if c.Process != nil {
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
}

func signalGroup(c *exec.Cmd, sig syscall.Signal) {
	if c.Process != nil {
		syscall.Kill(-c.Process.Pid, sig)
	}
}

// waitChan waits for a command in a goroutine.
func waitChan(c *exec.Cmd) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- c.Wait() }()
	return ch
}

// run supervises the pair until it stops or a process exits, then makes
// sure both are gone. notify is called on every readiness change.
func (p *Platform) runReplica(ctx context.Context, spec revSpec, r *replica, notify func()) {
	defer close(r.done)
	log := p.log.With(zap.String("revision", spec.key.String()), zap.String("replica", r.name))
	app, qp, err := p.startProcesses(spec, r)
	if err != nil {
		log.Error("replica did not start", zap.Error(err))
		r.crashed.Store(true)
		return
	}
	r.appPid.Store(int64(app.Process.Pid))
	log.Info("replica started", zap.Int("port", r.serving), zap.Int("appPid", app.Process.Pid), zap.Int("queueProxyPid", qp.Process.Pid))
	appDone, qpDone := waitChan(app), waitChan(qp)
	probeCtx, stopProbe := context.WithCancel(ctx)
	go p.probe(probeCtx, r, notify)
	select {
	case err := <-appDone:
		// The app is gone: nothing is left to drain. Take the replica out
		// of the activator's list and kill its queue-proxy at once, so
		// requests fail over to another replica instead of getting 502s.
		p.crash(log, r, "app", err, notify)
		killGroup(qp)
		appDone = closedWith(err)
	case err := <-qpDone:
		p.crash(log, r, "queue-proxy", err, notify)
		qpDone = closedWith(err)
	case <-r.stop:
	case <-ctx.Done():
	}
	stopProbe()
	r.setReady(false)
	notify()
	p.stopPair(log, app, qp, appDone, qpDone)
}

func closedWith(err error) <-chan error {
	ch := make(chan error, 1)
	ch <- err
	return ch
}

func (p *Platform) crash(log *zap.Logger, r *replica, which string, err error, notify func()) {
	r.stopping.Store(true)
	r.setReady(false)
	notify()
	r.crashed.Store(true)
	log.Warn("replica process exited; it will be replaced", zap.String("process", which), zap.Error(err))
}

// stopPair stops in order: the queue-proxy drains first, then the app;
// after the stop timeout, whatever is left of both groups is killed.
func (p *Platform) stopPair(log *zap.Logger, app, qp *exec.Cmd, appDone, qpDone <-chan error) {
	deadline := time.NewTimer(p.o.StopTimeout)
	defer deadline.Stop()
	signalGroup(qp, syscall.SIGTERM)
	select {
	case <-qpDone:
	case <-deadline.C:
		log.Warn("queue-proxy did not drain in time; killing it", zap.Duration("stopTimeout", p.o.StopTimeout))
	}
	killGroup(qp)
	signalGroup(app, syscall.SIGTERM)
	select {
	case <-appDone:
	case <-deadline.C:
		log.Warn("app did not stop in time; killing it", zap.Duration("stopTimeout", p.o.StopTimeout))
	case <-time.After(10 * time.Second):
		log.Warn("app did not stop 10s after SIGTERM; killing it")
	}
	killGroup(app)
	log.Info("replica stopped")
}

// probe asks the queue-proxy "are you ready" (the probe header, answered
// without reaching the app) every ProbeInterval until it is, then every
// ReadyProbeInterval; three failures in a row make it not ready.
func (p *Platform) probe(ctx context.Context, r *replica, notify func()) {
	tr := &http.Transport{MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	probe := proxycore.QueueProbe("Ebb-Local-Probe", 500*time.Millisecond)
	failures := 0
	for {
		interval := p.o.ProbeInterval
		if r.ready.Load() {
			interval = p.o.ReadyProbeInterval
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
		ok := probe.Get(ctx, tr, r.servingAddr()) == nil
		switch {
		case ok && !r.ready.Load():
			failures = 0
			r.setReady(true)
			notify()
		case ok:
			failures = 0
		case r.ready.Load():
			if failures++; failures >= 3 {
				r.setReady(false)
				notify()
			}
		}
	}
}

// servingService is SERVING_SERVICE: the Knative Service's name, empty
// when none owns the revision (Knative's value).
func servingService(n config.KnativeNames) string {
	if n.Service == config.UnknownName {
		return ""
	}
	return n.Service
}
