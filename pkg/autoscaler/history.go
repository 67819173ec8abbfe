package autoscaler

import (
	"encoding/binary"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"
)

// ReasonView is a reason as the API serves it.
type ReasonView struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// DecisionView is a decision as the API serves it.
type DecisionView struct {
	Time            time.Time `json:"time"`
	Recommended     int32     `json:"recommended"`
	Desired         int32     `json:"desired"`
	Ready           int32     `json:"ready"`
	Panic           bool      `json:"panic"`
	EBC             int32     `json:"ebc"`
	ActivatorInPath bool      `json:"activatorInPath"`
	// State is activating, active, inactive, or parked (inactive with its
	// one replica parked: Parked).
	State        string       `json:"state"`
	Parked       bool         `json:"parked,omitempty"`
	HasData      bool         `json:"hasData"`
	Stable       float64      `json:"stable"`
	PanicAverage float64      `json:"panicAverage"`
	Reasons      []ReasonView `json:"reasons"`
	// Conditions are, for the HPA class, Kubernetes' HPA conditions the
	// decision implies (decider.HPAConditions).
	Conditions []decider.Condition `json:"conditions,omitempty"`
	// Repeated counts the later decisions identical to this one (same
	// counts, state, routing and reasons; values may differ) that were
	// folded into it; Until is the time of the last of them.
	Repeated int       `json:"repeated,omitempty"`
	Until    time.Time `json:"until,omitempty"`
}

// stateParked is DecisionView.State of a parked decision.
const stateParked = "parked"

// maxStoredReasons bounds the reasons kept per decision in the history.
const maxStoredReasons = 8

// storedReason is a reason in 16 bytes: interned code and detail, and its
// numbers as float32 (enough for a sentence).
type storedReason struct {
	code, detail uint8
	a, b, c      float32
}

// entry is one decision of the history as the code reads it; the history
// stores it packed (history.add).
type entry struct {
	at, until      int64 // unix seconds
	repeat         uint32
	rec, des, rdy  int32
	ebc            int32
	stable, panicV float64
	panic, act     bool
	hasData        bool
	hpa            bool // the HPA class: the view carries its conditions
	parked         bool // the replica is parked (decider.Decision.Parked)
	state          decider.State
	n              uint8
	reasons        [maxStoredReasons]storedReason
}

func entryOf(d *decider.Decision, ready int32) entry {
	e := entry{at: d.At.Unix(), rec: d.Recommended, des: d.Desired, rdy: ready, ebc: d.EBC,
		stable: finite(d.Stable), panicV: finite(d.PanicAverage), panic: d.Panic, act: d.ActivatorInPath, hasData: d.HasData, state: d.State,
		hpa: d.Class == config.ClassHPA, parked: d.Parked}
	e.until = e.at
	for _, r := range d.Reasons() {
		if int(e.n) == maxStoredReasons {
			break
		}
		v := r.Values()
		e.reasons[e.n] = storedReason{code: intern(string(r.Code)), detail: intern(r.Detail), a: narrow(v[0]), b: narrow(v[1]), c: narrow(v[2])}
		e.n++
	}
	return e
}

// fold folds e into the record b starts with when the two differ only in
// their numbers (same counts, panic, routing, data, state, parking, sign of the
// excess burst capacity, and reason codes and details), and reports
// whether it did. The folded record counts one more repeat, ends at e,
// and shows e's numbers, in its header and its reasons alike; it is
// changed in place, field by field, as its other fields stay.
func fold(b []byte, e *entry) bool {
	le := binary.LittleEndian
	flags := b[48]
	if int32(le.Uint32(b[16:])) != e.rec || int32(le.Uint32(b[20:])) != e.des || int32(le.Uint32(b[24:])) != e.rdy ||
		flags&1 != 0 != e.panic || flags&2 != 0 != e.act || flags&4 != 0 != e.hasData || flags&16 != 0 != e.parked || decider.State(b[49]) != e.state ||
		int32(le.Uint32(b[28:])) < 0 != (e.ebc < 0) || b[50] != e.n {
		return false
	}
	for i := range int(e.n) {
		if o := b[recordHead+i*recordReason:]; o[0] != e.reasons[i].code || o[1] != e.reasons[i].detail {
			return false
		}
	}
	le.PutUint32(b[8:], uint32(e.at-int64(le.Uint64(b[0:]))))
	le.PutUint32(b[12:], le.Uint32(b[12:])+1)
	le.PutUint32(b[28:], uint32(e.ebc))
	le.PutUint64(b[32:], math.Float64bits(e.stable))
	le.PutUint64(b[40:], math.Float64bits(e.panicV))
	for i, r := range e.reasons[:e.n] {
		o := b[recordHead+i*recordReason:]
		le.PutUint32(o[2:], math.Float32bits(r.a))
		le.PutUint32(o[6:], math.Float32bits(r.b))
		le.PutUint32(o[10:], math.Float32bits(r.c))
	}
	return true
}

// foldDecision is fold of entryOf(d, ready), read from the decision
// itself: no entry is built and no name interned, a stored reason's code
// and detail being compared with the names their numbers stand for. It
// reports false whenever it cannot tell (a name past the table's 255:
// "unknown"), and the caller then folds the slow way; a record it folds
// is byte for byte the one fold makes (TestHistoryPackedAgreesWithEntries
// runs both ways).
func foldDecision(b []byte, d *decider.Decision, ready int32) bool {
	le := binary.LittleEndian
	rs := d.Reasons()
	n := min(len(rs), maxStoredReasons)
	flags := b[48]
	if int32(le.Uint32(b[16:])) != d.Recommended || int32(le.Uint32(b[20:])) != d.Desired || int32(le.Uint32(b[24:])) != ready ||
		flags&1 != 0 != d.Panic || flags&2 != 0 != d.ActivatorInPath || flags&4 != 0 != d.HasData || flags&16 != 0 != d.Parked ||
		decider.State(b[49]) != d.State || int32(le.Uint32(b[28:])) < 0 != (d.EBC < 0) || int(b[50]) != n {
		return false
	}
	names := interned.snap.Load().names
	for i := range n {
		o := b[recordHead+i*recordReason:]
		if int(o[0]) >= len(names) || names[o[0]] != string(rs[i].Code) || int(o[1]) >= len(names) || names[o[1]] != rs[i].Detail {
			return false
		}
	}
	at := d.At.Unix()
	le.PutUint32(b[8:], uint32(at-int64(le.Uint64(b[0:]))))
	le.PutUint32(b[12:], le.Uint32(b[12:])+1)
	le.PutUint32(b[28:], uint32(d.EBC))
	le.PutUint64(b[32:], math.Float64bits(finite(d.Stable)))
	le.PutUint64(b[40:], math.Float64bits(finite(d.PanicAverage)))
	for i := range n {
		o, v := b[recordHead+i*recordReason:], rs[i].Values()
		le.PutUint32(o[2:], math.Float32bits(narrow(v[0])))
		le.PutUint32(o[6:], math.Float32bits(narrow(v[1])))
		le.PutUint32(o[10:], math.Float32bits(narrow(v[2])))
	}
	return true
}

func (e *entry) view() DecisionView {
	v := DecisionView{Time: time.Unix(e.at, 0), Recommended: e.rec, Desired: e.des, Ready: e.rdy, Panic: e.panic,
		EBC: e.ebc, ActivatorInPath: e.act, State: e.state.String(), HasData: e.hasData,
		Stable: e.stable, PanicAverage: e.panicV, Repeated: int(e.repeat)}
	if e.parked {
		v.State, v.Parked = stateParked, true
	}
	if e.repeat > 0 {
		v.Until = time.Unix(e.until, 0)
	}
	var rs []decider.Reason
	for _, r := range e.reasons[:e.n] {
		dr := decider.RestoredReason(decider.Code(name(r.code)), name(r.detail), [3]float64{widen(r.a), widen(r.b), widen(r.c)})
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

// history keeps one revision's last decisions, a decision like the
// previous one folded into it. Its records are packed bytes (recordHead,
// then recordReason for each reason: about 100 bytes for a decision of 3
// reasons, where an entry takes 192), oldest first, so ten decisions of a
// revision take about a kilobyte. The revision's owner adds; API handlers
// read; mu guards everything.
type history struct {
	mu     sync.Mutex
	recs   []byte
	n      int // records
	newest int // offset of the newest record
	limit  int
}

// The layout of a record (little-endian): at int64, until-at uint32,
// repeat uint32, rec, des, rdy, ebc int32, stable, panic float64, flags
// (panic, activator, hasData, hpa, parked) byte, state byte, reasons byte; then
// each reason: code byte, detail byte, a, b, c float32.
const (
	recordHead   = 51
	recordReason = 14
)

func newHistory(limit int) history { return history{limit: max(limit, 1)} }

func (h *history) add(d *decider.Decision, ready int32) { h.addFolding(d, ready, true) }

// addFolding is add, trying foldDecision first when fast (false only in
// the test that checks foldDecision against fold).
func (h *history) addFolding(d *decider.Decision, ready int32, fast bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n > 0 && fast && foldDecision(h.recs[h.newest:], d, ready) {
		return // most decisions: like the last one
	}
	e := entryOf(d, ready)
	if h.n > 0 && fold(h.recs[h.newest:], &e) {
		return
	}
	if h.n == h.limit { // the oldest goes
		h.recs = h.recs[:copy(h.recs, h.recs[recordSize(h.recs):])]
		h.n--
	}
	need := len(h.recs) + e.size()
	if need > cap(h.recs) { // by half, up to what limit records of every reason take
		most := h.limit * (recordHead + maxStoredReasons*recordReason)
		grown := make([]byte, len(h.recs), max(need, min(cap(h.recs)*3/2, most)))
		copy(grown, h.recs)
		h.recs = grown
	}
	h.newest, h.recs = len(h.recs), h.recs[:need]
	e.write(h.recs[h.newest:])
	h.n++
}

// recordSize is the size of the record b starts with.
func recordSize(b []byte) int { return recordHead + int(b[recordHead-1])*recordReason }

func (e *entry) size() int { return recordHead + int(e.n)*recordReason }

func (e *entry) write(b []byte) {
	le := binary.LittleEndian
	le.PutUint64(b[0:], uint64(e.at))
	le.PutUint32(b[8:], uint32(e.until-e.at))
	le.PutUint32(b[12:], e.repeat)
	for i, v := range [4]int32{e.rec, e.des, e.rdy, e.ebc} {
		le.PutUint32(b[16+4*i:], uint32(v))
	}
	le.PutUint64(b[32:], math.Float64bits(e.stable))
	le.PutUint64(b[40:], math.Float64bits(e.panicV))
	var flags byte
	for i, f := range [5]bool{e.panic, e.act, e.hasData, e.hpa, e.parked} {
		if f {
			flags |= 1 << i
		}
	}
	b[48], b[49], b[50] = flags, byte(e.state), e.n
	for i, r := range e.reasons[:e.n] {
		o := b[recordHead+i*recordReason:]
		o[0], o[1] = r.code, r.detail
		le.PutUint32(o[2:], math.Float32bits(r.a))
		le.PutUint32(o[6:], math.Float32bits(r.b))
		le.PutUint32(o[10:], math.Float32bits(r.c))
	}
}

func readEntry(b []byte) entry {
	le := binary.LittleEndian
	e := entry{at: int64(le.Uint64(b[0:])), repeat: le.Uint32(b[12:]),
		rec: int32(le.Uint32(b[16:])), des: int32(le.Uint32(b[20:])), rdy: int32(le.Uint32(b[24:])), ebc: int32(le.Uint32(b[28:])),
		stable: math.Float64frombits(le.Uint64(b[32:])), panicV: math.Float64frombits(le.Uint64(b[40:])),
		state: decider.State(b[49]), n: b[50]}
	e.until = e.at + int64(le.Uint32(b[8:]))
	flags := b[48]
	e.panic, e.act, e.hasData, e.hpa, e.parked = flags&1 != 0, flags&2 != 0, flags&4 != 0, flags&8 != 0, flags&16 != 0
	for i := range int(e.n) {
		o := b[recordHead+i*recordReason:]
		e.reasons[i] = storedReason{code: o[0], detail: o[1], a: math.Float32frombits(le.Uint32(o[2:])),
			b: math.Float32frombits(le.Uint32(o[6:])), c: math.Float32frombits(le.Uint32(o[10:]))}
	}
	return e
}

// last returns up to n decisions, newest first.
func (h *history) last(n int) []DecisionView {
	h.mu.Lock()
	defer h.mu.Unlock()
	offsets := make([]int, 0, h.n)
	for o := 0; o < len(h.recs); o += recordSize(h.recs[o:]) {
		offsets = append(offsets, o)
	}
	n = min(n, h.n)
	out := make([]DecisionView, 0, n)
	for i := range n {
		e := readEntry(h.recs[offsets[len(offsets)-1-i]:])
		out = append(out, e.view())
	}
	return out
}

// latest returns the newest decision, and false when there is none.
// Summary is a revision's latest decision without its sentences: what a
// caller looking at every revision often compares (EachSummary), built
// without allocating. Reasons is a hash of the decision's reason codes and
// details: equal hashes, the same reasons (to the hash's odds).
type Summary struct {
	Key                         RevisionKey
	Desired, Recommended, Ready int32
	EBC                         int32
	Panic, ActivatorInPath      bool
	HasData, Resting, Parked    bool
	State                       decider.State
	Stable                      float64
	Reasons                     uint64
}

// latestSummary is latest as a Summary (Key and Resting left to the caller).
func (h *history) latestSummary() (Summary, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 {
		return Summary{}, false
	}
	e := readEntry(h.recs[h.newest:])
	s := Summary{Desired: e.des, Recommended: e.rec, Ready: e.rdy, EBC: e.ebc, Panic: e.panic, ActivatorInPath: e.act,
		HasData: e.hasData, State: e.state, Stable: e.stable, Reasons: uint64(e.n), Parked: e.parked}
	if e.hpa {
		s.Reasons |= 1 << 8
	}
	for _, r := range e.reasons[:e.n] {
		s.Reasons = s.Reasons*1099511628211 + uint64(r.code)<<8 + uint64(r.detail)
	}
	return s, true
}

func (h *history) latest() (DecisionView, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 {
		return DecisionView{}, false
	}
	e := readEntry(h.recs[h.newest:])
	return e.view(), true
}

// interned maps codes and details to small numbers, so a stored reason
// needs no string. Codes are a small fixed vocabulary; past 255 names the
// rest share one "unknown". Readers load an immutable snapshot (every
// decision interns its reasons: a lock would be one cache line for every
// worker); a new name copies it under mu.
var interned = struct {
	mu   sync.Mutex
	snap atomic.Pointer[internTable]
}{}

type internTable struct {
	index map[string]uint8
	names []string
	hits  []*internHit // by number: what internHits holds
}

// internHits is a direct-mapped cache in front of the table, by a few of a
// name's bytes: the names of a decision are mostly the same few constants,
// which a hit compares by their pointer (a map lookup hashes them whole).
// Its entries are the table's own (internTable.hits): a miss allocates
// nothing, and two names that share a slot take turns.
var internHits [64]atomic.Pointer[internHit]

type internHit struct {
	s string
	i uint8
}

func init() {
	interned.snap.Store(&internTable{index: map[string]uint8{"": 0}, names: []string{""}, hits: []*internHit{{}}})
}

func intern(s string) uint8 {
	if s == "" {
		return 0
	}
	slot := &internHits[(len(s)+int(s[0])*3+int(s[len(s)/2])*5+int(s[len(s)-1])*7)%len(internHits)]
	if h := slot.Load(); h != nil && h.s == s {
		return h.i
	}
	t := interned.snap.Load()
	i, ok := t.index[s]
	if !ok {
		if i = internNew(s); i == math.MaxUint8 {
			return i // the table is full: "unknown", not cached
		}
		t = interned.snap.Load()
	}
	slot.Store(t.hits[i])
	return i
}

// internNew adds s to the table under interned.mu.
func internNew(s string) uint8 {
	interned.mu.Lock()
	defer interned.mu.Unlock()
	old := interned.snap.Load()
	if i, ok := old.index[s]; ok {
		return i
	}
	if len(old.names) >= math.MaxUint8 {
		return math.MaxUint8
	}
	i := uint8(len(old.names))
	t := &internTable{index: maps.Clone(old.index), names: append(slices.Clip(old.names), s),
		hits: append(slices.Clip(old.hits), &internHit{s: s, i: i})}
	t.index[s] = i
	interned.snap.Store(t)
	return i
}

func name(i uint8) string {
	if names := interned.snap.Load().names; int(i) < len(names) {
		return names[i]
	}
	return "unknown"
}
