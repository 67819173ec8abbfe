package autoscaler

import (
	"sync"
	"time"

	"ebb.dev/ebb/pkg/decider"
)

// ReasonView is a reason as the API serves it.
type ReasonView struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// DecisionView is a decision as the API serves it.
type DecisionView struct {
	Time            time.Time    `json:"time"`
	Recommended     int32        `json:"recommended"`
	Desired         int32        `json:"desired"`
	Ready           int32        `json:"ready"`
	Panic           bool         `json:"panic"`
	EBC             int32        `json:"ebc"`
	ActivatorInPath bool         `json:"activatorInPath"`
	State           string       `json:"state"`
	HasData         bool         `json:"hasData"`
	Stable          float64      `json:"stable"`
	PanicAverage    float64      `json:"panicAverage"`
	Reasons         []ReasonView `json:"reasons"`
}

func viewOf(d *decider.Decision, ready int32) DecisionView {
	v := DecisionView{
		Time: d.At, Recommended: d.Recommended, Desired: d.Desired, Ready: ready,
		Panic: d.Panic, EBC: d.EBC, ActivatorInPath: d.ActivatorInPath,
		State: d.State.String(), HasData: d.HasData, Stable: d.Stable, PanicAverage: d.PanicAverage,
	}
	for _, r := range d.Reasons() {
		v.Reasons = append(v.Reasons, ReasonView{Code: string(r.Code), Message: r.Message()})
	}
	return v
}

// history keeps the last decisions of one revision in a ring. The
// revision's goroutine adds; API handlers read. mu guards everything.
type history struct {
	mu    sync.Mutex
	ring  []DecisionView
	next  int
	count int
}

func newHistory(size int) *history { return &history{ring: make([]DecisionView, max(size, 1))} }

func (h *history) add(v DecisionView) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ring[h.next] = v
	h.next = (h.next + 1) % len(h.ring)
	h.count = min(h.count+1, len(h.ring))
}

// last returns up to n decisions, newest first.
func (h *history) last(n int) []DecisionView {
	h.mu.Lock()
	defer h.mu.Unlock()
	n = min(n, h.count)
	out := make([]DecisionView, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, h.ring[(h.next-i+len(h.ring))%len(h.ring)])
	}
	return out
}
