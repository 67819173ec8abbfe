package autoscaler

import (
	"context"

	"go.uber.org/zap"
)

// Handoff stops autoscaling revisions that another autoscaler replica
// takes over (their bucket moves). It is Delete, except that it returns
// only once each revision's goroutine has stopped (no decision of this
// replica follows: the caller then lets the next owner in) and after
// saving their learned states in one batch (the next owner loads them),
// both bounded by ctx.
func (a *Autoscaler) Handoff(ctx context.Context, keys ...RevisionKey) {
	var gone []*revision
	a.mu.Lock()
	running := a.runCtx != nil
	for _, key := range keys {
		if r, ok := a.revisions[key]; ok {
			gone = append(gone, r)
			delete(a.revisions, key)
			delete(a.anns, key)
		}
	}
	a.countLocked()
	a.mu.Unlock()
	for _, r := range gone {
		r.stop()
	}
	for _, r := range gone {
		if running {
			select {
			case <-r.stopped:
			case <-ctx.Done():
			}
		}
		a.deps.metrics.forget(r.key)
		a.deps.series.forget(r.key)
	}
	if s := a.deps.learned; s != nil {
		s.flushKeys(ctx, keys)
	}
}

// flushKeys saves the waiting states of the given revisions in one batch
// and forgets them, saved or not: they are another replica's now.
func (s *learnedSaver) flushKeys(ctx context.Context, keys []RevisionKey) {
	batch := map[RevisionKey][]byte{}
	s.mu.Lock()
	for _, k := range keys {
		if p, ok := s.pending[k]; ok {
			batch[k] = p.blob
			delete(s.pending, k)
		}
	}
	s.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, learnedIOTimeout)
	defer cancel()
	if err := s.store.Save(sctx, batch); err != nil {
		s.log.Warn("saving the learned state of revisions handed off failed; the next owner learns them afresh",
			zap.Int("revisions", len(batch)), zap.Error(err))
	}
}
