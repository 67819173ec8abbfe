package activator

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
)

// tunnels tracks the open upgrade tunnels (websockets). fasthttp's
// Shutdown does not wait for hijacked connections, so a graceful shutdown
// waits for them here, up to the drain timeout, and then closes them.
type tunnels struct {
	mu     sync.Mutex            // owns open, idle and closed
	open   map[net.Conn]struct{} // the replica side of each open tunnel
	idle   chan struct{}         // closed when open empties; nil while nobody waits
	closed bool                  // closeAll was called: no new tunnel opens
	count  atomic.Int64          // len(open), for the gauge
}

// add records a tunnel about to open to replica. It reports false after
// closeAll: the drain is over and the tunnel must not open.
func (t *tunnels) add(replica net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	if t.open == nil {
		t.open = map[net.Conn]struct{}{}
	}
	t.open[replica] = struct{}{}
	t.count.Add(1)
	return true
}

// done records the end of the tunnel to replica.
func (t *tunnels) done(replica net.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.open[replica]; !ok {
		return
	}
	delete(t.open, replica)
	t.count.Add(-1)
	if len(t.open) == 0 && t.idle != nil {
		close(t.idle)
		t.idle = nil
	}
}

// wait waits until no tunnel is open or ctx ends; it reports whether none
// is open.
func (t *tunnels) wait(ctx context.Context) bool {
	t.mu.Lock()
	if len(t.open) == 0 {
		t.mu.Unlock()
		return true
	}
	if t.idle == nil {
		t.idle = make(chan struct{})
	}
	idle := t.idle
	t.mu.Unlock()
	select {
	case <-idle:
		return true
	case <-ctx.Done():
		return false
	}
}

// closeAll closes the replica side of every open tunnel (each then ends,
// closing its client side too) and refuses new ones. It returns how many
// it closed.
func (t *tunnels) closeAll() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for c := range t.open {
		c.Close() // ends the tunnel either way
	}
	return len(t.open)
}
