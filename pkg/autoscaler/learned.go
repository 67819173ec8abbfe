package autoscaler

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"
)

// LearnedStore keeps the learned scale-to-zero policy's state of each
// revision (decider.Decider.LearnedState: a blob of at most
// decider.MaxLearnedStateSize bytes) across autoscaler restarts and leader
// failovers. The autoscaler loads a revision's state when it creates the
// revision's decider, and saves the states whose history changed in
// batches, at most once a Options.LearnedSaveInterval, from one goroutine,
// and once more when it stops. Implementations must be safe for
// concurrent use.
type LearnedStore interface {
	// Load returns a revision's saved state; nil and no error when none
	// is saved.
	Load(ctx context.Context, rev RevisionKey) ([]byte, error)
	// Save stores the states of a batch of revisions, each replacing the
	// one saved before. On an error the whole batch is offered again at
	// the next save (saving a state twice is harmless); a state the store
	// will never keep (its revision is gone, or there is no room) is
	// dropped by the store, which says so, and is no error.
	Save(ctx context.Context, states map[RevisionKey][]byte) error
}

// Defaults of the learned state's saving (Options).
const (
	DefaultLearnedSaveInterval = 30 * time.Second
	defaultLearnedSaveBatch    = 100
	// learnedIOTimeout bounds one Load or Save, and the final flush.
	learnedIOTimeout = 5 * time.Second
)

// learnedSaver batches the revisions' changed states for the store: each
// revision's newest state waits (one per revision, so the memory is
// bounded by the revisions and decider.MaxLearnedStateSize) until the next
// flush, which saves at most batch of them, those waiting longest first.
type learnedSaver struct {
	store    LearnedStore
	interval time.Duration
	batch    int
	log      *zap.Logger

	mu      sync.Mutex // guards pending and seq
	pending map[RevisionKey]pendingState
	seq     uint64
}

type pendingState struct {
	blob []byte
	seq  uint64 // when it first waited: the oldest are saved first
	ver  uint64 // when it was offered: a newer offer has a higher one
}

func newLearnedSaver(o Options, log *zap.Logger) *learnedSaver {
	if o.LearnedStore == nil {
		return nil
	}
	s := &learnedSaver{store: o.LearnedStore, interval: o.LearnedSaveInterval, batch: o.LearnedSaveBatch,
		log: log.Named("learned"), pending: map[RevisionKey]pendingState{}}
	if s.interval <= 0 {
		s.interval = DefaultLearnedSaveInterval
	}
	if s.batch <= 0 {
		s.batch = defaultLearnedSaveBatch
	}
	return s
}

// offer queues a revision's newest state; it replaces one still waiting
// and keeps its place in the line.
func (s *learnedSaver) offer(key RevisionKey, blob []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	p, ok := s.pending[key]
	if !ok {
		p.seq = s.seq
	}
	p.blob, p.ver = blob, s.seq
	s.pending[key] = p
}

// waiting returns the state of a revision that waits to be saved: newer
// than the store's.
func (s *learnedSaver) waiting(key RevisionKey) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pending[key]
	return p.blob, ok
}

// forget drops a deleted revision's waiting state.
func (s *learnedSaver) forget(key RevisionKey) {
	s.mu.Lock()
	delete(s.pending, key)
	s.mu.Unlock()
}

// take removes and returns up to n waiting states, oldest first.
func (s *learnedSaver) take(n int) []RevisionKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := slices.SortedFunc(maps.Keys(s.pending), func(a, b RevisionKey) int {
		return cmp.Compare(s.pending[a].seq, s.pending[b].seq)
	})
	return keys[:min(n, len(keys))]
}

// run flushes every interval until ctx ends. The autoscaler's Run calls
// flush once more after its revisions stopped.
func (s *learnedSaver) run(ctx context.Context, clock Clock) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-clock.After(s.interval):
			s.flush(ctx, s.batch)
		}
	}
}

// flush saves up to n waiting states in one batch. When the batch fails
// its states wait again (unless newer ones replaced them).
func (s *learnedSaver) flush(ctx context.Context, n int) {
	keys := s.take(n)
	if len(keys) == 0 {
		return
	}
	batch := make(map[RevisionKey][]byte, len(keys))
	vers := make(map[RevisionKey]uint64, len(keys))
	s.mu.Lock()
	for _, k := range keys {
		batch[k], vers[k] = s.pending[k].blob, s.pending[k].ver
	}
	s.mu.Unlock()
	sctx, cancel := context.WithTimeout(ctx, learnedIOTimeout)
	err := s.store.Save(sctx, batch)
	cancel()
	if err != nil {
		s.log.Warn("saving learned state failed; retrying at the next save", zap.Int("revisions", len(batch)), zap.Error(err))
		return
	}
	s.mu.Lock()
	for k, v := range vers {
		if cur, ok := s.pending[k]; ok && cur.ver == v {
			delete(s.pending, k) // saved, and no newer state came meanwhile
		}
	}
	s.mu.Unlock()
}

// flushAll saves every waiting state, bounded in time: the autoscaler is
// stopping.
func (s *learnedSaver) flushAll() {
	ctx, cancel := context.WithTimeout(context.Background(), learnedIOTimeout)
	defer cancel()
	s.mu.Lock()
	n := len(s.pending)
	s.mu.Unlock()
	s.flush(ctx, n)
}

// learnedStart gives a new learned decider its history: the previous
// decider's (a configuration change), else the store's. A state that does
// not load or decode is logged and skipped: the policy learns afresh.
func (r *revision) learnedStart(ctx context.Context, d *decider.Decider) {
	carry := r.carry
	r.carry, r.savedGen = nil, 0
	if d == nil || r.cfg.rev.ScaleToZeroPolicy != config.ScaleToZeroLearned {
		return
	}
	from := "previous decider"
	if carry == nil && r.deps.learned != nil {
		if blob, ok := r.deps.learned.waiting(r.key); ok {
			carry, from = blob, "states waiting to be saved"
		}
	}
	if carry == nil && r.deps.learned != nil {
		from = "store"
		lctx, cancel := context.WithTimeout(ctx, learnedIOTimeout)
		blob, err := r.deps.learned.store.Load(lctx, r.key)
		cancel()
		if err != nil {
			r.log().Warn("learned state not loaded; the policy learns afresh", zap.Error(err))
			return
		}
		carry = blob
	}
	if carry == nil {
		return
	}
	n, err := d.RestoreLearned(carry)
	if err != nil {
		r.log().Warn("learned state ignored; the policy learns afresh", zap.String("from", from), zap.Error(err))
		return
	}
	r.log().Info("learned state restored", zap.String("from", from), zap.Int("gaps", n))
}

// learnedOffer hands the decider's state to the saver when its history
// changed since it was last offered.
func (r *revision) learnedOffer() {
	d := r.loop.Stepper.Decider()
	if r.deps.learned == nil || d == nil {
		return
	}
	if gen := d.LearnedGeneration(); gen != r.savedGen {
		blob, _ := d.LearnedState()
		r.deps.learned.offer(r.key, blob)
		r.savedGen = gen
	}
}
