package autoscaler

import (
	"context"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/stats"
)

// release stops autoscaling a revision here because another autoscaler
// takes it over, as Handoff does for one revision, and returns the
// activator reports it accepted and did not decide on yet, for the new
// owner to take. A report that races with Release is either among those
// returned or refused by Ingest (ErrUnknownRevision): never taken by both
// owners, never lost. Nil for an unknown revision.
func (a *Autoscaler) release(ctx context.Context, key RevisionKey) []stats.Stat {
	r, reports := a.remove(key, evStop|evHandOver)
	if r != nil {
		a.handedOver(ctx, []*revision{r}, []RevisionKey{key})
	}
	return reports
}

// Handoff stops autoscaling revisions that another autoscaler replica
// takes over (their bucket moves). It is Delete, except that it returns
// only once no decision of this replica can follow for them (the caller
// then lets the next owner in) and after saving their learned states in
// one batch (the next owner loads them), both bounded by ctx. Their
// reports not decided on yet are dropped (Release returns them).
func (a *Autoscaler) Handoff(ctx context.Context, keys ...RevisionKey) {
	var gone []*revision
	for _, key := range keys {
		if r, _ := a.remove(key, evStop|evHandOver); r != nil {
			gone = append(gone, r)
		}
	}
	a.handedOver(ctx, gone, keys)
}

// handedOver waits for the revisions to end and saves their learned states.
func (a *Autoscaler) handedOver(ctx context.Context, gone []*revision, keys []RevisionKey) {
	for _, r := range gone {
		r.waitEnded(ctx)
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
