package autoscaler

import (
	"math"
	"strconv"
	"sync"
	"time"

	"ebb.dev/ebb/pkg/config"
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
	// Conditions are, for the HPA class, Kubernetes' HPA conditions the
	// decision implies (decider.HPAConditions).
	Conditions []decider.Condition `json:"conditions,omitempty"`
	// Repeated counts the later decisions identical to this one (same
	// counts, state, routing and reasons; values may differ) that were
	// folded into it; Until is the time of the last of them.
	Repeated int       `json:"repeated,omitempty"`
	Until    time.Time `json:"until,omitempty"`
}

// maxStoredReasons bounds the reasons kept per decision in the history.
const maxStoredReasons = 8

// storedReason is a reason in 16 bytes: interned code and detail, and its
// numbers as float32 (enough for a sentence).
type storedReason struct {
	code, detail uint8
	a, b, c      float32
}

// entry is one decision in the history, about 190 bytes.
type entry struct {
	at, until      int64 // unix seconds
	repeat         uint32
	rec, des, rdy  int32
	ebc            int32
	stable, panicV float64
	panic, act     bool
	hasData        bool
	hpa            bool // the HPA class: the view carries its conditions
	state          decider.State
	n              uint8
	reasons        [maxStoredReasons]storedReason
}

func entryOf(d *decider.Decision, ready int32) entry {
	e := entry{at: d.At.Unix(), rec: d.Recommended, des: d.Desired, rdy: ready, ebc: d.EBC,
		stable: finite(d.Stable), panicV: finite(d.PanicAverage), panic: d.Panic, act: d.ActivatorInPath, hasData: d.HasData, state: d.State,
		hpa: d.Class == config.ClassHPA}
	e.until = e.at
	for _, r := range d.Reasons() {
		if int(e.n) == maxStoredReasons {
			break
		}
		e.reasons[e.n] = storedReason{code: intern(string(r.Code)), detail: intern(r.Detail), a: narrow(r.A), b: narrow(r.B), c: narrow(r.C)}
		e.n++
	}
	return e
}

// sameAs reports whether e and o differ only in their numbers: then o is
// folded into e as a repeat.
func (e *entry) sameAs(o *entry) bool {
	if e.rec != o.rec || e.des != o.des || e.rdy != o.rdy || e.panic != o.panic || e.act != o.act ||
		e.state != o.state || e.hasData != o.hasData || (e.ebc < 0) != (o.ebc < 0) || e.n != o.n {
		return false
	}
	for i := range e.n {
		if e.reasons[i].code != o.reasons[i].code || e.reasons[i].detail != o.reasons[i].detail {
			return false
		}
	}
	return true
}

func (e *entry) view() DecisionView {
	v := DecisionView{Time: time.Unix(e.at, 0), Recommended: e.rec, Desired: e.des, Ready: e.rdy, Panic: e.panic,
		EBC: e.ebc, ActivatorInPath: e.act, State: e.state.String(), HasData: e.hasData,
		Stable: e.stable, PanicAverage: e.panicV, Repeated: int(e.repeat)}
	if e.repeat > 0 {
		v.Until = time.Unix(e.until, 0)
	}
	var rs []decider.Reason
	for _, r := range e.reasons[:e.n] {
		dr := decider.Reason{Code: decider.Code(name(r.code)), A: widen(r.a), B: widen(r.b), C: widen(r.c), Detail: name(r.detail)}
		v.Reasons = append(v.Reasons, ReasonView{Code: string(dr.Code), Message: dr.Message()})
		rs = append(rs, dr)
	}
	if e.hpa {
		v.Conditions = decider.HPAConditions(rs)
	}
	return v
}

// finite is f, or 0 when f is NaN or infinite. The decider never produces
// either (it refuses out-of-bounds inputs); this keeps every JSON answer
// encodable whatever happens, since encoding/json fails on them and an
// answer would be cut to nothing.
func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

// narrow is f as a float32 for a stored reason, clamped to the float32
// range so that a large number does not turn into +Inf in a sentence.
func narrow(f float64) float32 {
	return float32(max(min(finite(f), math.MaxFloat32), -math.MaxFloat32))
}

// widen restores a float32 to the float64 of its shortest decimal form, so
// 0.7 prints as 0.7 and not 0.699999988079071.
func widen(f float32) float64 {
	w, _ := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64) // always a number
	return w
}

// history keeps one revision's last decisions in a ring that grows up to
// its capacity; a decision like the previous one is folded into it. The
// revision's goroutine adds; API handlers read; mu guards everything.
type history struct {
	mu      sync.Mutex
	ring    []entry
	limit   int
	next    int // where the next entry goes once the ring is full
	hasLast bool
}

func newHistory(limit int) *history { return &history{limit: max(limit, 1)} }

func (h *history) add(d *decider.Decision, ready int32) {
	e := entryOf(d, ready)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hasLast {
		last := &h.ring[h.lastIndex()]
		if last.sameAs(&e) {
			last.repeat++
			last.until = e.at
			// The folded entry shows the latest numbers, in its header and
			// its reasons alike (the codes are the same: sameAs).
			last.ebc, last.stable, last.panicV, last.reasons = e.ebc, e.stable, e.panicV, e.reasons
			return
		}
	}
	h.hasLast = true
	if len(h.ring) < h.limit {
		h.ring = append(h.ring, e)
		return
	}
	h.ring[h.next] = e
	h.next = (h.next + 1) % h.limit
}

func (h *history) lastIndex() int {
	if len(h.ring) < h.limit {
		return len(h.ring) - 1
	}
	return (h.next - 1 + h.limit) % h.limit
}

// last returns up to n decisions, newest first.
func (h *history) last(n int) []DecisionView {
	h.mu.Lock()
	defer h.mu.Unlock()
	n = min(n, len(h.ring))
	out := make([]DecisionView, 0, n)
	for i := range n {
		idx := h.lastIndex() - i
		if idx < 0 {
			idx += len(h.ring)
		}
		out = append(out, h.ring[idx].view())
	}
	return out
}

// latest returns the newest decision, and false when there is none.
func (h *history) latest() (DecisionView, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.hasLast {
		return DecisionView{}, false
	}
	return h.ring[h.lastIndex()].view(), true
}

// interned maps codes and details to small numbers, so a stored reason
// needs no string. Codes are a small fixed vocabulary; past 255 names the
// rest share one "unknown".
var interned = struct {
	sync.RWMutex
	index map[string]uint8
	names []string
}{index: map[string]uint8{"": 0}, names: []string{""}}

func intern(s string) uint8 {
	interned.RLock()
	i, ok := interned.index[s]
	interned.RUnlock()
	if ok {
		return i
	}
	interned.Lock()
	defer interned.Unlock()
	if i, ok := interned.index[s]; ok {
		return i
	}
	if len(interned.names) >= math.MaxUint8 {
		return math.MaxUint8
	}
	i = uint8(len(interned.names))
	interned.index[s] = i
	interned.names = append(interned.names, s)
	return i
}

func name(i uint8) string {
	interned.RLock()
	defer interned.RUnlock()
	if int(i) < len(interned.names) {
		return interned.names[i]
	}
	return "unknown"
}
