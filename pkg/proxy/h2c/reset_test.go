package h2c

import (
	"testing"
	"time"
)

// TestResetBudget: a burst of resetBurst resets is allowed at once, the
// next is not; the bucket refills at resetRate a second, up to the burst.
func TestResetBudget(t *testing.T) {
	now := time.Unix(1000, 0)
	var b resetBudget
	for i := range resetBurst {
		if !b.take(now) {
			t.Fatalf("reset %d of the burst refused", i+1)
		}
	}
	if b.take(now) {
		t.Fatalf("reset %d allowed, want the burst of %d to be the limit", resetBurst+1, resetBurst)
	}
	now = now.Add(100 * time.Millisecond) // 10 tokens
	for i := range 10 {
		if !b.take(now) {
			t.Fatalf("reset %d after 100ms refused, want %d allowed", i+1, resetRate/10)
		}
	}
	if b.take(now) {
		t.Errorf("an 11th reset after 100ms allowed")
	}
	now = now.Add(time.Hour)
	n := 0
	for b.take(now) {
		n++
	}
	if n != resetBurst {
		t.Errorf("after an hour %d resets allowed, want the burst %d (the bucket holds no more)", n, resetBurst)
	}
}
