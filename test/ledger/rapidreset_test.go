package ledger

import (
	"testing"
	"time"

	"ebb.dev/ebb/internal/testnet"
)

// rapidResetPairs is the size of the flood: HEADERS then RST_STREAM, on
// fresh streams, as fast as the connection takes them.
const rapidResetPairs = 20000

// rapidResetReach bounds the flood's streams that may reach the app: the
// guard's burst (200) and those already on their way when it trips.
const rapidResetReach = 400

// TestRapidResetClosesConnection: a Rapid Reset flood on one HTTP/2
// connection, through each route: the proxy in front closes the
// connection, and at most rapidResetReach of the flood's requests reach
// the app. Before, the queue-proxy kept the connection open through the
// whole flood and about 5% of its streams reached the app (the activator
// already closed it: net/http's server ends a connection whose handlers
// back up).
func TestRapidResetClosesConnection(t *testing.T) {
	for _, r := range routes {
		t.Run(string(r), func(t *testing.T) {
			a := startBigApp(t)
			d := front(t, r, a.addr)
			c := testnet.DialH2(t, d.addr)
			sent := c.RapidReset(1, rapidResetPairs, host, "/flood")
			_, closed := c.Wait(10*time.Second, func(_ map[uint32]testnet.H2Stream, ended bool) bool { return ended })
			time.Sleep(200 * time.Millisecond) // requests already on their way land
			reached := a.others.Load()
			t.Logf("%s: %d of %d pairs written, connection closed %v, %d requests reached the app", r, sent, rapidResetPairs, closed, reached)
			if !closed {
				t.Errorf("%s: the connection is still open after a flood of %d HEADERS+RST_STREAM pairs", r, sent)
			}
			if reached > rapidResetReach {
				t.Errorf("%s: %d of the flood's requests reached the app, want at most %d", r, reached, rapidResetReach)
			}
		})
	}
}
