package busypoll

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"ebb.dev/ebb/internal/testnet"
)

// TestRawIO: a polling connection's own reads and writes (raw system
// calls) behave as the net package's: a write larger than the socket's
// buffers goes out whole to a slow reader; a write or read past its
// deadline fails with a deadline error that names the operation; a read
// of a closed connection fails with net.ErrClosed; the peer's close is
// io.EOF.
func TestRawIO(t *testing.T) {
	var open atomic.Int64
	b := New(0, &open) // no polling: every read is a raw one
	client, server := testnet.TCPPair(t)
	pc := b.wrap(server)
	if _, ok := pc.(*pollConn); !ok {
		t.Fatalf("wrap(%T) = %T, want a polling connection", server, pc)
	}

	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB: many times a socket's buffers
	got := make(chan []byte, 1)
	go func() {
		var buf bytes.Buffer
		chunk := make([]byte, 64<<10)
		for buf.Len() < len(big) {
			n, err := client.Read(chunk)
			buf.Write(chunk[:n])
			if err != nil {
				break
			}
			time.Sleep(100 * time.Microsecond) // a slow reader: the writer waits for room
		}
		got <- buf.Bytes()
	}()
	if n, err := pc.Write(big); n != len(big) || err != nil {
		t.Fatalf("write of 4 MiB: %d, %v", n, err)
	}
	if b := <-got; !bytes.Equal(b, big) {
		t.Fatalf("the reader got %d bytes, not the 4 MiB written", len(b))
	}

	if _, err := client.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := pc.Read(buf); err != nil || string(buf[:n]) != "ping" {
		t.Fatalf("read: %q, %v", buf[:n], err)
	}

	if err := pc.SetWriteDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	var werr error
	for range 1000 { // nobody reads: the buffers fill, then the deadline passes
		if _, werr = pc.Write(big[:1<<20]); werr != nil {
			break
		}
	}
	var oe *net.OpError
	if !errors.Is(werr, os.ErrDeadlineExceeded) || !errors.As(werr, &oe) || oe.Op != "write" {
		t.Errorf("write to a peer that reads nothing: %v, want a write deadline error", werr)
	}

	c2, s2 := testnet.TCPPair(t)
	defer c2.Close()
	pc2 := b.wrap(s2)
	if err := pc2.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := pc2.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &oe) || oe.Op != "read" {
		t.Errorf("read of a silent peer: %v, want a read deadline error", err)
	}
	if err := pc2.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	c2.Write([]byte("bye"))
	c2.Close()
	if n, err := pc2.Read(buf); err != nil || string(buf[:n]) != "bye" {
		t.Errorf("read before the close: %q, %v", buf[:n], err)
	}
	if n, err := pc2.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("read after the peer closed: %d, %v; want 0, io.EOF", n, err)
	}
	pc2.Close()
	if _, err := pc2.Read(buf); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read of a closed connection: %v, want net.ErrClosed", err)
	}
	if _, err := pc2.Write(buf); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write to a closed connection: %v, want net.ErrClosed", err)
	}
}

// TestRawIOAllocs: a raw read and write allocate nothing.
func TestRawIOAllocs(t *testing.T) {
	var open atomic.Int64
	client, server := testnet.TCPPair(t)
	pc := New(0, &open).wrap(server)
	msg, buf := []byte("0123456789"), make([]byte, 64)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := pc.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(client, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
		if _, err := client.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(pc, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per write and read, want 0", allocs)
	}
}

// TestSysReadWrite: the raw read and write system calls on a
// non-blocking socket: EAGAIN when there is nothing to read, the bytes
// written, end of file after the peer's close, EPIPE writing to it.
func TestSysReadWrite(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := uintptr(fds[0]), uintptr(fds[1])
	defer syscall.Close(fds[0])
	buf := make([]byte, 16)
	if n, e := sysRead(a, buf); n != 0 || e != syscall.EAGAIN {
		t.Errorf("read of an empty socket: %d, %v; want EAGAIN", n, e)
	}
	if n, e := sysWrite(b, []byte("hello")); n != 5 || e != 0 {
		t.Errorf("write: %d, %v", n, e)
	}
	if n, e := sysRead(a, buf); e != 0 || string(buf[:n]) != "hello" {
		t.Errorf("read: %q, %v", buf[:n], e)
	}
	if n, e := sysRead(a, nil); n != 0 || e != 0 {
		t.Errorf("read into nothing: %d, %v", n, e)
	}
	syscall.Close(fds[1])
	if n, e := sysRead(a, buf); n != 0 || e != 0 {
		t.Errorf("read after the peer closed: %d, %v; want 0 (end of file)", n, e)
	}
	if _, e := sysWrite(a, []byte("x")); e != syscall.EPIPE {
		t.Errorf("write to a closed peer: %v, want EPIPE", e)
	}
}

// TestRawIOConcurrentWrites: two writes at once each go out whole, one
// after the other, as net.Conn's do.
func TestRawIOConcurrentWrites(t *testing.T) {
	var open atomic.Int64
	client, server := testnet.TCPPair(t)
	pc := New(0, &open).wrap(server)
	const size = 1 << 20
	done := make(chan error, 2)
	for _, c := range []byte("ab") {
		go func() {
			_, err := pc.Write(bytes.Repeat([]byte{c}, size))
			done <- err
		}()
	}
	got := make([]byte, 2*size)
	if _, err := io.ReadFull(client, got); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	first, second := got[:size], got[size:]
	if bytes.Count(first, first[:1]) != size || bytes.Count(second, second[:1]) != size || first[0] == second[0] {
		t.Errorf("two writes of 1 MiB interleaved: the first half starts %q, the second %q", first[:8], second[:8])
	}
}
