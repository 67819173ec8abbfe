package local

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// supervisor keeps one revision's replicas at the wanted count. Its
// goroutine (run) starts and stops replicas; mu guards what readers see.
type supervisor struct {
	p   *Platform
	log *zap.Logger

	mu       sync.Mutex // guards spec, replicas, want
	spec     revSpec
	replicas []*replica // running or starting, not stopping
	want     int

	activatorInPath atomic.Bool
	parked          atomic.Bool   // the autoscaler parked the revision's replica (park.go)
	kick            chan struct{} // buffered 1
	quit            chan struct{}
	quitOnce        sync.Once

	// Owned by run.
	seq       int
	crashes   int       // consecutive crashes without a replica becoming ready
	holdUntil time.Time // no new replica before this (crash back-off)
	stopping  sync.WaitGroup
}

func newSupervisor(p *Platform, spec revSpec) *supervisor {
	return &supervisor{p: p, spec: spec, log: p.log.With(zap.String("revision", spec.key.String())),
		kick: make(chan struct{}, 1), quit: make(chan struct{})}
}

func (s *supervisor) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *supervisor) scale(n int) {
	s.mu.Lock()
	changed := s.want != n
	s.want = n
	s.mu.Unlock()
	if changed {
		s.log.Info("scale", zap.Int("replicas", n))
	}
	s.poke()
}

// setSpec takes a new spec; when the processes differ, the running
// replicas are replaced.
func (s *supervisor) setSpec(spec revSpec) {
	s.mu.Lock()
	replace := !s.spec.sameProcess(spec)
	s.spec = spec
	var old []*replica
	if replace {
		old, s.replicas = s.replicas, nil
	}
	s.mu.Unlock()
	if replace && len(old) > 0 {
		s.log.Info("container changed; replacing the replicas", zap.Int("replicas", len(old)))
		for _, r := range old {
			s.stopReplica(r)
		}
	}
	s.poke()
}

func (s *supervisor) currentSpec() revSpec {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spec
}

func (s *supervisor) replicaList() []*replica {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*replica(nil), s.replicas...)
}

func (s *supervisor) shutdown() { s.quitOnce.Do(func() { close(s.quit) }) }

// run reconciles on every kick, replica exit and back-off expiry; on
// shutdown it stops every replica and waits for them.
func (s *supervisor) run(ctx context.Context) {
	defer s.stopping.Wait()
	defer s.stopEverything()
	tick := time.NewTicker(250 * time.Millisecond) // notices crashed replicas and back-off expiry
	defer tick.Stop()
	for {
		s.reconcile(ctx)
		select {
		case <-ctx.Done():
			return
		case <-s.quit:
			return
		case <-s.kick:
		case <-tick.C:
		}
	}
}

// reconcile drops crashed replicas and starts or stops replicas to match
// the wanted count.
func (s *supervisor) reconcile(ctx context.Context) {
	s.reapCrashed()
	s.mu.Lock()
	want, have, spec := s.want, len(s.replicas), s.spec
	s.mu.Unlock()
	switch {
	case have > want:
		s.scaleDown(have - want)
	case have < want && time.Now().After(s.holdUntil):
		for range want - have {
			if err := s.startReplica(ctx, spec); err != nil {
				s.log.Error("cannot start a replica", zap.Error(err))
				s.backOff()
				return
			}
		}
	}
}

// reapCrashed removes replicas whose processes exited on their own and sets
// the back-off before their replacement; a ready replica resets it.
func (s *supervisor) reapCrashed() {
	s.mu.Lock()
	kept := s.replicas[:0]
	crashed := 0
	for _, r := range s.replicas {
		switch {
		case r.crashed.Load():
			crashed++
		default:
			if r.ready.Load() {
				s.crashes = 0
			}
			kept = append(kept, r)
		}
	}
	clear(s.replicas[len(kept):])
	s.replicas = kept
	s.mu.Unlock()
	for range crashed {
		s.backOff()
	}
	if crashed > 0 {
		s.p.notify()
	}
}

func (s *supervisor) backOff() {
	s.crashes++
	wait := time.Second << min(s.crashes-1, 10)
	wait = min(wait, s.p.o.MaxBackoff)
	s.holdUntil = time.Now().Add(wait)
	s.log.Warn("replica back-off", zap.Int("crashes", s.crashes), zap.Duration("wait", wait))
}

// scaleDown stops n replicas: not-ready ones first, then the newest.
func (s *supervisor) scaleDown(n int) {
	s.mu.Lock()
	var victims []*replica
	for i := len(s.replicas) - 1; i >= 0 && len(victims) < n; i-- {
		if !s.replicas[i].ready.Load() {
			victims = append(victims, s.replicas[i])
		}
	}
	for i := len(s.replicas) - 1; i >= 0 && len(victims) < n; i-- {
		if r := s.replicas[i]; r.ready.Load() {
			victims = append(victims, r)
		}
	}
	s.replicas = without(s.replicas, victims)
	s.mu.Unlock()
	for _, r := range victims {
		s.stopReplica(r)
	}
	s.p.notify()
}

func without(all, drop []*replica) []*replica {
	out := all[:0]
	for _, r := range all {
		keep := true
		for _, d := range drop {
			keep = keep && r != d
		}
		if keep {
			out = append(out, r)
		}
	}
	return out
}

// stopReplica asks a replica to stop in order; its goroutine does it.
func (s *supervisor) stopReplica(r *replica) {
	if r.stopping.Swap(true) {
		return
	}
	close(r.stop)
}

func (s *supervisor) startReplica(ctx context.Context, spec revSpec) error {
	s.seq++
	r, err := newReplica(fmt.Sprintf("%s-%s-%d", spec.key.Namespace, spec.key.Name, s.seq), time.Now())
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.replicas = append(s.replicas, r)
	s.mu.Unlock()
	s.stopping.Add(1)
	go func() {
		defer s.stopping.Done()
		s.p.runReplica(ctx, spec, r, s.p.notify)
		s.poke()
	}()
	s.p.notify()
	return nil
}

func (s *supervisor) stopEverything() {
	s.mu.Lock()
	all := s.replicas
	s.replicas = nil
	s.mu.Unlock()
	for _, r := range all {
		s.stopReplica(r)
	}
	s.p.notify()
}
