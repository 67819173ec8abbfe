package main

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestMain runs main itself when the test binary is started as the pause
// process (TestExitsOnSIGTERM).
func TestMain(m *testing.M) {
	if os.Getenv("EBB_PAUSE_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestExitsOnSIGTERM: pause runs until SIGTERM (or SIGINT), then exits 0.
func TestExitsOnSIGTERM(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "EBB_PAUSE_MAIN=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			t.Fatalf("pause exited before any signal: %v", err)
		case <-time.After(300 * time.Millisecond):
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("after %v: %v, want exit 0", sig, err)
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("pause still runs 10s after %v", sig)
		}
	}
}

// TestReapsExitedChildren: reap collects children that have exited (the
// zombies a pod's PID namespace hands to its PID 1), several at once.
func TestReapsExitedChildren(t *testing.T) {
	var pids []int
	for range 3 {
		pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{})
		if err != nil {
			t.Skipf("cannot start /bin/true: %v", err)
		}
		pids = append(pids, pid)
	}
	zombie := func(pid int) bool {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		return err == nil && len(data) > 0
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for !zombieState(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	reap()
	for _, pid := range pids {
		if zombie(pid) {
			t.Errorf("child %d is still there after reap", pid)
		}
	}
}

// zombieState reports whether pid has exited and waits to be reaped.
func zombieState(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	for i := len(data) - 1; i > 0; i-- { // the state follows the command's closing parenthesis
		if data[i] == ')' && i+2 < len(data) {
			return data[i+2] == 'Z'
		}
	}
	return false
}
