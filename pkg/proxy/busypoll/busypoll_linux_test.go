package busypoll

import (
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"ebb.dev/ebb/internal/testnet"
)

// TestPollConnReads: a polling connection reads what a plain one would:
// data (picked up by the poll when it arrives within the budget, by the
// parked read otherwise), end of file, a reset, and a passed deadline.
func TestPollConnReads(t *testing.T) {
	var open atomic.Int64
	b := New(50*time.Millisecond, &open)
	b.busyRound = time.Hour // a loaded machine must not stop these polls
	client, server := testnet.TCPPair(t)
	pc := b.wrap(server)
	if _, ok := pc.(*pollConn); !ok {
		t.Fatalf("wrap(%T) = %T, want a polling connection", server, pc)
	}
	buf := make([]byte, 16)

	go func() { time.Sleep(time.Millisecond); client.Write([]byte("soon")) }()
	if n, err := pc.Read(buf); err != nil || string(buf[:n]) != "soon" {
		t.Fatalf("read within the budget: %q, %v", buf[:n], err)
	}
	go func() { time.Sleep(150 * time.Millisecond); client.Write([]byte("late")) }()
	if n, err := pc.Read(buf); err != nil || string(buf[:n]) != "late" {
		t.Fatalf("read after the budget: %q, %v", buf[:n], err)
	}
	if b.spins.Load() != 2 || b.hits.Load() < 1 {
		t.Errorf("spins %d, hits %d; want 2 polls, the first one a hit", b.spins.Load(), b.hits.Load())
	}

	if err := pc.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := pc.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read past the deadline: %v, want a deadline error", err)
	}
	if err := pc.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}

	client.Close()
	if n, err := pc.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("read after the peer closed: %d, %v; want 0, io.EOF", n, err)
	}

	client2, server2 := testnet.TCPPair(t)
	pc2 := b.wrap(server2)
	client2.(*net.TCPConn).SetLinger(0) // close with a reset
	client2.Close()
	time.Sleep(10 * time.Millisecond)
	if _, err := pc2.Read(buf); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("read after a reset: %v, want ECONNRESET", err)
	}
}

// TestBusyPollGate: reads poll only while CPUs are spare: no more at once
// than maxSpin, none while more requests are open than GOMAXPROCS.
func TestBusyPollGate(t *testing.T) {
	var open atomic.Int64
	b := New(50*time.Microsecond, &open)
	if off := New(0, &open); off.enter() {
		t.Fatal("a zero budget must disable polling")
	}
	var entered int32
	for b.enter() {
		entered++
		if entered > 64 {
			t.Fatal("enter never refuses")
		}
	}
	if entered != b.maxSpin {
		t.Errorf("%d reads polled at once, want maxSpin %d", entered, b.maxSpin)
	}
	for range entered {
		b.leave()
	}
	open.Store(b.busyAt + 1)
	if b.enter() {
		t.Errorf("a read polled with %d requests open (limit %d)", open.Load(), b.busyAt)
	}
	open.Store(b.busyAt)
	if !b.enter() {
		t.Errorf("a read did not poll with %d requests open (limit %d)", open.Load(), b.busyAt)
	}
	b.leave()
}

// TestBusyCPUsStopPolling: a poll one of whose rounds took longer than
// busyRound (the CPUs were busy) stops, and the next quietReads reads of
// the process do not poll.
func TestBusyCPUsStopPolling(t *testing.T) {
	var open atomic.Int64
	b := New(50*time.Millisecond, &open)
	b.busyRound = 0 // every round counts as busy
	client, server := testnet.TCPPair(t)
	pc := b.wrap(server)
	go func() { time.Sleep(20 * time.Millisecond); client.Write([]byte("x")) }()
	buf := make([]byte, 4)
	if n, err := pc.Read(buf); n != 1 || err != nil {
		t.Fatalf("read: %d, %v", n, err)
	}
	if spins, hits := b.Stats(); spins != 1 || hits != 0 || b.quiet.Load() != quietReads {
		t.Errorf("spins %d, hits %d, quiet %d; want one poll, stopped at its first round: no hit, %d quiet reads",
			spins, hits, b.quiet.Load(), quietReads)
	}
	if b.enter() {
		t.Error("a read polled during the quiet reads")
	}
	if b.quiet.Load() != quietReads-1 {
		t.Errorf("quiet %d after one refused read, want %d", b.quiet.Load(), quietReads-1)
	}
}

// TestPollBackoff: a poll that comes up empty makes the connection skip
// polling for 1, then 2, 4 ... reads; a poll that gets data ends that.
func TestPollBackoff(t *testing.T) {
	var open atomic.Int64
	b := New(time.Microsecond, &open)
	b.busyRound = time.Hour // a loaded machine must not stop these polls
	client, server := testnet.TCPPair(t)
	pc := b.wrap(server).(*pollConn)
	buf := make([]byte, 16)
	// read sends its byte only after the read's poll (if it polls) has
	// started, and 5 ms later still: every poll misses, even on a slow
	// machine that starts the read late.
	read := func() {
		t.Helper()
		before, _ := b.Stats()
		go func() {
			for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); time.Sleep(100 * time.Microsecond) {
				if spins, _ := b.Stats(); spins != before {
					break
				}
			}
			time.Sleep(5 * time.Millisecond)
			client.Write([]byte("x"))
		}()
		if n, err := pc.Read(buf); n != 1 || err != nil {
			t.Fatalf("read: %d, %v", n, err)
		}
	}
	var polled []int64
	for range 7 {
		read()
		spins, _ := b.Stats()
		polled = append(polled, spins)
	}
	// polls at reads 1, 3 (after skipping 1), 6 (after skipping 2); read 7 skipped
	if want := []int64{1, 1, 2, 2, 2, 3, 3}; !slices.Equal(polled, want) {
		t.Errorf("polls after each read %v, want %v", polled, want)
	}
	if pc.backoff.Load() != 4 {
		t.Errorf("back-off %d, want 4", pc.backoff.Load())
	}
	if _, err := client.Write([]byte("y")); err != nil { // already there: a hit
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	pc.skip.Store(0)
	if n, err := pc.Read(buf); n != 1 || err != nil {
		t.Fatalf("read: %d, %v", n, err)
	}
	if pc.backoff.Load() != 0 || pc.skip.Load() != 0 {
		t.Errorf("after a hit: back-off %d, skip %d; want 0, 0", pc.backoff.Load(), pc.skip.Load())
	}
}
