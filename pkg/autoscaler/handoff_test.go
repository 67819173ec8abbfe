package autoscaler

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHandoffSavesAndStops: a revision handed off to another replica is
// gone from this one at once (no decision of this replica follows when
// Handoff returns), and its learned state is saved then, not at the next
// save: the next owner restores it from its first decision.
func TestHandoffSavesAndStops(t *testing.T) {
	store := newMemStore()
	first := newTimerDriver(t, store, nil)
	rounds := int64(14)
	first.run(t0, t0+rounds*learnedTimer)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- first.a.Run(ctx) }()
	first.a.Handoff(context.Background(), hello)
	first.r.mu.Lock()
	ended := first.r.ended
	first.r.mu.Unlock()
	if !ended {
		t.Error("Handoff returned before the revision ended")
	}
	if _, _, err := first.a.decisions(hello, 1); !errors.Is(err, ErrUnknownRevision) {
		t.Errorf("after the hand-off: %v, want ErrUnknownRevision", err)
	}
	if len(store.states[hello]) == 0 || len(store.saves) != 1 {
		t.Fatalf("saves %v: want the revision's state saved once, by the hand-off", store.saves)
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if len(store.saves) != 1 {
		t.Errorf("saves %v: the stopping autoscaler saved a handed-off revision again", store.saves)
	}

	from := t0 + rounds*learnedTimer
	next := newTimerDriver(t, store, nil) // the replica that takes the bucket over
	next.run(from, from+learnedTimer)
	if got := next.codes(from + 2); !cmp.Equal(got, []string{"LearnedRelease/restored"}) {
		t.Errorf("the next owner's first decision without load: %v; want LearnedRelease/restored", got)
	}
}
