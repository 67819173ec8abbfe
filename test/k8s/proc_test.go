//go:build k8s

package k8s

import (
	"log"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// proc is one container's process, restarted when it exits.
type proc struct {
	name    string
	argv    []string
	env     []string
	logPath string
	direct  bool          // binds the pod address itself
	preStop time.Duration // the container's preStop sleep
	log     *log.Logger

	mu       sync.Mutex
	cmd      *exec.Cmd
	stopping bool
	restart  time.Duration // wait before the next start
	exited   chan struct{} // closed when supervise returns
}

func (p *proc) start() {
	p.exited = make(chan struct{})
	p.restart = time.Second
	go p.supervise()
}

func (p *proc) supervise() {
	defer close(p.exited)
	for {
		out, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			p.log.Printf("%s: %v", p.name, err)
			return
		}
		cmd := exec.Command(p.argv[0], p.argv[1:]...)
		cmd.Env = append(os.Environ(), p.env...)
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		p.mu.Lock()
		if p.stopping {
			p.mu.Unlock()
			out.Close()
			return
		}
		err = cmd.Start()
		p.cmd = cmd
		p.mu.Unlock()
		if err == nil {
			err = cmd.Wait()
		}
		out.Close()
		p.mu.Lock()
		stopping, wait := p.stopping, p.restart
		p.restart = time.Second
		p.mu.Unlock()
		if stopping {
			return
		}
		p.log.Printf("%s exited (%v); restarting in %v", p.name, err, wait)
		time.Sleep(wait)
	}
}

// pid is the id of the process last started, 0 when none was (it may
// have exited since: reading it then fails).
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// kill sends SIGKILL (a crash) and restarts the container after the wait.
func (p *proc) kill(restartAfter time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.restart = restartAfter
	if p.cmd != nil && p.cmd.Process != nil {
		p.cmd.Process.Kill()
	}
}

// freeze stops the process (SIGSTOP), a hung replica: the kernel still
// accepts connections to it, and what they carry waits; kill ends it.
func (p *proc) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && p.cmd.Process != nil {
		p.cmd.Process.Signal(syscall.SIGSTOP)
	}
}

// terminate is a kubelet's stop: the preStop sleep, SIGTERM, SIGKILL
// after the grace period.
func (p *proc) terminate(grace time.Duration) {
	p.mu.Lock()
	p.stopping = true // no restart from here
	p.mu.Unlock()
	began := time.Now()
	time.Sleep(p.preStop)
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace - time.Since(began)):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

// stop ends the process for good: SIGTERM and up to 10s (graceful), then
// SIGKILL.
func (p *proc) stop(graceful bool) {
	p.mu.Lock()
	p.stopping = true
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	if graceful {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
			return
		case <-time.After(10 * time.Second):
		}
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Process.Kill()
	<-p.exited
}

func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
