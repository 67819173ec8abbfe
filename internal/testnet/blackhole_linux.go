//go:build linux

package testnet

import (
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"
)

// BlackHole is a loopback TCP address whose SYNs nobody answers, as an
// address whose SYN is lost or dropped on the way: a listener with a
// backlog of 0 (one connection) whose accept queue is full and never
// accepted, so the kernel drops every further SYN and a connect to it
// waits for the SYN retries (about 127 s). It skips the test on a kernel
// that answers anyway.
func BlackHole(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	filler, err := net.DialTimeout("tcp", addr, time.Second) // fills the accept queue
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = filler.Close() })
	if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
		_ = c.Close()
		t.Skip("this kernel answered a SYN on a full accept queue; no black hole to test with")
	}
	return addr
}
