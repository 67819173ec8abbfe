package ledger

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"ebb.dev/ebb/internal/testnet"
)

// HTTP/2 flow control must not let a client pin the proxies' memory: a
// client that opens streams and grants them no window stops its answers
// at the first proxy, and each stream's upstream sends until the proxy's
// receive window for it is full. Before, the upstream transports kept
// Go's defaults (4 MiB a stream, 1 GiB a connection): 100 such streams
// pinned about 430 MiB in each proxy. Now each proxy holds at most
// h2c.MaxStreamsPerConn x (h2c.StreamReceiveWindow + its copy and write
// buffers), about 29 MiB, for one client connection.

// zeroWindowStreams is the number of streams the stalled client opens:
// all a client connection may have (h2c.MaxStreamsPerConn).
const zeroWindowStreams = 100

// proxyBound is the most a proxy process may hold for one stalled client
// connection: the documented 29 MiB and the runtime's own slack (span
// rounding, goroutine stacks, the allocator's classes).
const proxyBound = 40 << 20

// TestZeroWindowMemory: one client, 100 streams each asking for 32 MiB
// and granted no window, through each route; the test's live heap (the
// proxies run in this process, the app's blocked writes and the client
// hold next to nothing) must not grow past proxyBound per proxy on the
// route, while the answers are stalled.
func TestZeroWindowMemory(t *testing.T) {
	for _, r := range routes {
		t.Run(string(r), func(t *testing.T) {
			a := startBigApp(t)
			d := front(t, r, a.addr)
			proxies := 1
			if r == viaChain {
				proxies = 2
			}
			bound := uint64(proxies * proxyBound)
			base := liveHeap()
			c := testnet.DialH2(t, d.addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
			for i := range zeroWindowStreams {
				c.Request(t, uint32(2*i+1), "GET", host, "/big", true)
			}
			testnet.WaitUntil(t, "every answer started", func() bool { return a.started.Load() >= zeroWindowStreams })
			// Let the upstreams fill whatever the proxies take in; measure
			// until the heap stops growing (or it is already over the bound).
			var peak uint64
			for last, start := uint64(0), time.Now(); time.Since(start) < 10*time.Second; {
				time.Sleep(300 * time.Millisecond)
				grown := liveHeap() - min(base, liveHeap())
				peak = max(peak, grown)
				if grown > bound || grown < last+(1<<20) && time.Since(start) > 2*time.Second {
					break
				}
				last = grown
			}
			t.Logf("%s: live heap grew %.1f MiB for %d stalled streams (bound %d MiB)",
				r, float64(peak)/(1<<20), zeroWindowStreams, bound>>20)
			if peak > bound {
				t.Errorf("%s: %d zero-window streams grew the live heap by %s, want at most %s (%d proxies x %s)",
					r, zeroWindowStreams, mib(peak), mib(bound), proxies, mib(proxyBound))
			}
			c.Close()
		})
	}
}

// liveHeap is the live heap after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// TestTrickleWindowReset: a client that grants each stalled stream 4 KiB
// of window every 400ms (10 KiB per write timeout of 1s: slower than a
// 16 KiB piece per timeout) has every stream reset within the write
// timeout (and a margin), through each route. Before, a piece was 4 KiB,
// so such a trickle kept its streams, and what the proxies held for
// them, for as long as it went on.
func TestTrickleWindowReset(t *testing.T) {
	const streams = 8
	for _, r := range routes {
		t.Run(string(r), func(t *testing.T) {
			t.Parallel()
			a := startBigApp(t)
			d := frontWith(t, r, a.addr, setup{writeTimeout: slowWriteTimeout})
			c := testnet.DialH2(t, d.addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
			for i := range streams {
				c.Request(t, uint32(2*i+1), "GET", host, "/big", true)
			}
			testnet.WaitUntil(t, "every answer started", func() bool { return a.started.Load() >= streams })
			start := time.Now()
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() { // the trickle
				defer close(done)
				tick := time.NewTicker(400 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					c.WindowUpdate(0, streams*4<<10)
					for i := range streams {
						c.WindowUpdate(uint32(2*i+1), 4<<10)
					}
				}
			}()
			got, ok := c.Wait(slowWriteTimeout+8*time.Second, func(s map[uint32]testnet.H2Stream, ended bool) bool {
				reset := 0
				for _, st := range s {
					if st.Reset {
						reset++
					}
				}
				return ended || reset >= streams
			})
			close(stop)
			<-done
			took := time.Since(start)
			t.Logf("%s: trickled streams reset after %v (write timeout %v)", r, took, slowWriteTimeout)
			if !ok {
				var data int
				for _, st := range got {
					data += st.Data
				}
				t.Errorf("%s: trickled streams still open %v after their answers began (%d bytes delivered), want reset within the write timeout %v",
					r, took, data, slowWriteTimeout)
			}
		})
	}
}
