package busypoll

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"ebb.dev/ebb/internal/testnet"
)

// echoPeer answers each read on c with its bytes in upper case, after
// delay; it stops when c fails.
func echoPeer(c net.Conn, delay time.Duration) {
	buf := make([]byte, 64)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return
		}
		time.Sleep(delay)
		for i := range buf[:n] {
			buf[i] -= 'a' - 'A'
		}
		if _, err := c.Write(buf[:n]); err != nil {
			return
		}
	}
}

// TestTurn: a turn writes, then reads the answer, on a plain TCP
// connection and on a polling one (whose poll gets a fast answer, and
// whose parked read gets a slow one), and allocates nothing on a polling
// connection.
func TestTurn(t *testing.T) {
	var open atomic.Int64
	b := New(20*time.Millisecond, &open)
	b.busyRound = time.Hour // a loaded machine must not stop these polls
	for _, tt := range []struct {
		name  string
		wrap  func(net.Conn) net.Conn
		delay time.Duration
	}{
		{name: "plain TCP", wrap: func(c net.Conn) net.Conn { return c }},
		{name: "polling, answer within the poll", wrap: b.wrap},
		{name: "polling, answer after the poll", wrap: b.wrap, delay: 50 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client, server := testnet.TCPPair(t)
			go echoPeer(server, tt.delay)
			c := tt.wrap(client)
			buf := make([]byte, 16)
			for _, msg := range []string{"ping", "again"} {
				n, werr, rerr := Turn(c, []byte(msg), buf)
				if werr != nil || rerr != nil || string(buf[:n]) != strings.ToUpper(msg) {
					t.Fatalf("turn %q: %q, write %v, read %v", msg, buf[:n], werr, rerr)
				}
			}
		})
	}
	client, server := testnet.TCPPair(t)
	go echoPeer(server, 0)
	pc := b.wrap(client)
	buf := make([]byte, 16)
	msg := []byte("x")
	if allocs := testing.AllocsPerRun(50, func() {
		if _, werr, rerr := Turn(pc, msg, buf); werr != nil || rerr != nil {
			t.Fatalf("turn: write %v, read %v", werr, rerr)
		}
	}); allocs != 0 {
		t.Errorf("a turn on a polling connection allocates %v times, want 0", allocs)
	}
}

// TestTurnEnds: a turn past its read deadline writes nothing, and its
// error says so (NotWritten: a caller that owes the bytes writes them);
// one whose peer is gone, or closed the connection before the write,
// ends with the read's error rather than waiting for an answer that
// cannot come.
func TestTurnEnds(t *testing.T) {
	var open atomic.Int64
	b := New(0, &open) // no polling: the parked read alone must see the end
	client, server := testnet.TCPPair(t)
	pc := b.wrap(client)
	_ = pc.SetReadDeadline(time.Now().Add(-time.Second))
	n, werr, rerr := Turn(pc, []byte("x"), make([]byte, 4))
	if n != 0 || werr != nil || !errors.Is(rerr, os.ErrDeadlineExceeded) || !NotWritten(rerr) {
		t.Errorf("turn past the deadline: %d, write %v, read %v; want nothing written and a deadline error that says so", n, werr, rerr)
	}
	_ = server.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if m, _ := server.Read(make([]byte, 4)); m != 0 {
		t.Errorf("the peer got %d bytes of a turn past its deadline", m)
	}
	_ = pc.SetReadDeadline(time.Now().Add(10 * time.Second))

	server.Close() // closed before the write: the write brings a reset, which wakes the read
	time.Sleep(10 * time.Millisecond)
	start := time.Now()
	_, werr, rerr = Turn(pc, []byte("x"), make([]byte, 4))
	if werr == nil && !errors.Is(rerr, io.EOF) && !errors.Is(rerr, syscall.ECONNRESET) {
		t.Errorf("turn to a closed peer: write %v, read %v; want end of file or a reset", werr, rerr)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("turn to a closed peer took %v: it waited for the deadline", d)
	}
}

// TestNotWrittenAllocatesNothing: NotWritten runs after every turn of a
// client connection, so it allocates nothing (errors.As did, once a
// request: its target escaped), and it still finds a wrapped
// notWrittenError and nothing else.
func TestNotWrittenAllocatesNothing(t *testing.T) {
	nw := notWrittenError{os.ErrDeadlineExceeded}
	wrapped := fmt.Errorf("reading: %w", nw)
	for _, c := range []struct {
		err  error
		want bool
	}{{nil, false}, {os.ErrDeadlineExceeded, false}, {io.EOF, false}, {nw, true}, {wrapped, true}} {
		if got := NotWritten(c.err); got != c.want {
			t.Errorf("NotWritten(%v) = %v, want %v", c.err, got, c.want)
		}
		if allocs := testing.AllocsPerRun(100, func() { NotWritten(c.err) }); allocs != 0 {
			t.Errorf("NotWritten(%v) allocates %v times, want 0", c.err, allocs)
		}
	}
}
