package h2c

import (
	"errors"
	"time"
)

// Rapid Reset (CVE-2023-44487): a client that opens streams and cancels
// them at once (HEADERS then RST_STREAM, over and over) makes the server
// start a handler for each while never having more than a few streams
// open, so the concurrent-stream limit does not hold it back, and each
// handler may already have sent its request on to the app. net/http's
// server bounds the handlers it runs, and ends the connection
// (ENHANCE_YOUR_CALM) only when they back up, which a fast hop (the
// queue-proxy, whose handlers end as soon as their stream is reset) does
// not do: the flood went on and a share of it reached the app.
//
// So the guard counts the client's RST_STREAM frames in a token bucket:
// resetBurst at once, refilled at resetRate a second. A client past it
// loses the connection: the server reads an error, closes it and cancels
// its streams, so at most about resetBurst streams of a flood reach the
// app. A client that cancels what it asked for (a gRPC deadline, a user
// who navigated away) stays far below: 100 cancellations a second on
// one connection, sustained, are allowed.
const (
	resetBurst = 2 * maxStreamsPerConn
	resetRate  = 100
)

// errRapidReset ends a connection whose client reset streams faster than
// the budget allows.
var errRapidReset = errors.New("h2c: the client reset streams faster than 100 a second (after a burst of 200): " +
	"a Rapid Reset flood; closing the connection")

// resetBudget is a connection's token bucket of stream resets. The zero
// value is a full bucket. Owned by the connection's reading goroutine.
type resetBudget struct {
	tokens float64
	at     time.Time // the last refill; zero: never used
}

// take spends one reset at now, and reports whether the budget allowed it.
func (b *resetBudget) take(now time.Time) bool {
	if b.at.IsZero() {
		b.tokens = resetBurst
	} else if d := now.Sub(b.at); d > 0 {
		b.tokens = min(resetBurst, b.tokens+d.Seconds()*resetRate)
	}
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
