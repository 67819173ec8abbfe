// Package stats owns the load reports that flow from the request path (the
// queue-proxy beside every replica, and the activator) to the autoscaler:
// the Stat type, its wire format, and the time-weighted concurrency
// accounting that produces the numbers.
//
// It is in the pure tier: standard library only, no I/O, no clock. Every
// call that depends on time takes now. The queue-proxy and the activator
// reuse the same Accounting and Stat; the Source field tells them apart.
//
// # Accounting
//
// Accounting follows Knative's RequestStats: In(now) when a request arrives
// (before any queueing, so queued requests count as concurrency), Out(now)
// when it ends, Report(now) every period. The average concurrency of a
// window is the integral of requests in flight over the window divided by
// its length: two requests of 500 ms within one second average 1.0. Counts
// reset at each report; requests in flight carry over to the next window.
// Requests that came through the activator (header K-Proxy-Request:
// activator SECRET, ProxyHeaderName, checked by ProxyMarker against the
// per-install secret) are counted twice, once in the totals and once
// in the proxied part, so the autoscaler can subtract what the activator
// already reported about them.
//
// # Wire format, version 1
//
// A Stat is encoded as a fixed 60-byte block followed by two
// length-prefixed names. Integers are big-endian; floats are IEEE-754
// binary64 bit patterns, big-endian. The stats endpoint serves exactly one
// encoded Stat with media type application/vnd.ebb.stat.v1 (ContentType).
//
//	offset size field
//	     0    2 magic "eb" (0x65 0x62)
//	     2    1 version, 1
//	     3    1 source: 1 queue-proxy, 2 activator
//	     4    8 time the report was cut, Unix nanoseconds, int64; 0 = unset
//	    12    8 period covered, nanoseconds, int64, 0 <= x <= 1h
//	    20    8 process uptime, nanoseconds, int64 >= 0
//	    28    8 average concurrency, float64, 0 <= x <= 1e6 (MaxConcurrency)
//	    36    8 average proxied concurrency, float64, finite, 0 <= x <= concurrency
//	    44    8 request count, uint64, <= 1e7 (MaxRequestRate) per second
//	            of the period, a period under a second counting as one
//	    52    8 proxied request count, uint64 <= request count
//	    60    1 pod name length n (<= 253)
//	    61    n pod name, bytes
//	  61+n    1 revision length m (<= 255; empty from a queue-proxy)
//	  62+n    m revision key, bytes ("namespace/name")
//
// A message is 62 to 570 bytes. A reader rejects a wrong magic, a version it
// does not know, a message whose length does not match its names, and any
// value that breaks the invariants above, so a decoded Stat is always safe
// to subtract from and to add up: a claim of 1e308 requests in flight is
// refused on the wire, with the field, value and bound in the error, and
// never reaches a decider. The encoding is canonical: decoding then encoding gives
// back the same bytes (FuzzUnmarshal checks it). A future version changes
// the version byte; readers reject what they do not know rather than guess,
// and the autoscaler counts such pods as failed scrapes.
//
// Counts, not rates, travel on the wire; RequestRate divides by the period
// (Knative sends the count divided by its one-second period, the same number
// when the period is one second).
package stats
