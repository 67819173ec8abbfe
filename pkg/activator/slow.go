package activator

import (
	"time"

	"go.uber.org/zap"
)

// stage is where a slow request's time went, a label of
// ebb_activator_slow_requests_total and a field of its Warning.
type stage int

const (
	// stageQueued: waiting for a slot on a replica (its revision at zero,
	// or its replicas full).
	stageQueued stage = iota
	// stageUpstream: from the slot to the head of the answer: connecting
	// to the replica, sending the request, the replica's (and its app's)
	// time to answer.
	stageUpstream
	// stageBody: the answer's body, streamed to the client.
	stageBody
	numStages
)

var stageNames = [numStages]string{"queued", "upstream", "body"}

// noteSlow logs and counts a request that took at least
// Options.SlowRequest, ending at now, unless it was an upgrade's tunnel
// (a websocket lasts as long as it likes). Every stage of a request is
// bounded (the queue and request timeouts, ConnectTimeout), so a stuck
// request names itself here when its bound ends it: the stage, the
// replica, how long each part took. Called by finish, before it clears x.
func (x *exchange) noteSlow(now time.Time) {
	a := x.a
	took := now.Sub(x.start)
	if a.opts.SlowRequest <= 0 || took < a.opts.SlowRequest || x.tunnel != nil {
		return
	}
	var body time.Duration
	if !x.headAt.IsZero() {
		body = now.Sub(x.headAt)
	}
	upstream := max(took-x.waited-body, 0)
	st := stageQueued
	switch {
	case upstream >= x.waited && upstream >= body:
		st = stageUpstream
	case body > x.waited:
		st = stageBody
	}
	a.metrics.slow[st].Inc()
	replica := x.dialAddr
	if x.r != nil {
		replica = x.r.addr
	}
	fields := []zap.Field{
		zap.String("revision", x.rev.key), zap.String("stage", stageNames[st]), zap.String("replica", replica),
		zap.Duration("took", took), zap.Duration("queued", x.waited), zap.Duration("upstream", upstream),
		zap.Duration("body", body), zap.Int("status", x.status), zap.Int("retries", x.retries),
	}
	if x.dialErr != nil {
		fields = append(fields, zap.String("unreachable", x.dialAddr), zap.NamedError("unreachableError", x.dialErr))
	}
	a.log.Warn("slow request", fields...)
}
