package secondloop

import (
	"time"

	"ebb.dev/ebb/pkg/stats"
)

// SecondOf is the second a report cut at t belongs to, for a revision
// that closes its seconds phase after their end: the one whose close
// would take it in had it arrived at once (a window cut exactly at a
// second's end belongs to the second it covers). The zero t (a report
// whose reporter set no time) belongs to no second in particular: it is
// never late.
func SecondOf(t time.Time, phase time.Duration) int64 {
	if t.IsZero() {
		return Open
	}
	return t.Add(-phase - time.Nanosecond).Unix()
}

// Open is the second of a report that counts in the next close, whatever
// second that closes.
const Open = int64(1<<63 - 1)

// Late is a report that arrived after its second was closed.
type Late struct {
	Sec  int64
	Stat stats.Stat
}

// maxLate bounds the late reports an Inbox holds between two closes;
// further ones count in the open second (they are not dropped).
const maxLate = 64

// Inbox holds a revision's activator reports until its next close: those
// of seconds not closed yet by stats.Pending's rule (they count in the
// next close), and the late ones apart, with their seconds. The zero
// value holds none (set Pending.Max to bound it). Not safe for
// concurrent use: the live autoscaler guards it with the revision's lock.
type Inbox struct {
	Pending stats.Pending
	late    []Late
	closed  int64 // the last second closed: reports of it and earlier are late
	started bool  // a second was closed
}

// Add takes a report of second sec (SecondOf).
func (b *Inbox) Add(st stats.Stat, sec int64) {
	if b.started && sec <= b.closed && len(b.late) < maxLate {
		b.late = append(b.late, Late{Sec: sec, Stat: st})
		return
	}
	b.Pending.Add(st)
}

// Take hands the reports to the close of second sec: the pending ones
// appended to dst (in stats.Pending's order) and the late ones to late
// (in their order of arrival), with the count of pending reports dropped.
// From then on, reports of sec and earlier are late.
func (b *Inbox) Take(sec int64, dst []stats.Stat, late []Late) ([]stats.Stat, []Late, int) {
	dst, dropped := b.Pending.Take(dst)
	late = append(late, b.late...)
	clear(b.late)
	b.late = b.late[:0]
	if !b.started || sec > b.closed {
		b.closed, b.started = sec, true
	}
	return dst, late, dropped
}

// Len is the number of reports held.
func (b *Inbox) Len() int { return b.Pending.Len() + len(b.late) }

// Drain returns every report held, late ones last, and empties b (a
// revision handed to another autoscaler passes them on).
func (b *Inbox) Drain() []stats.Stat {
	dst, _ := b.Pending.Take(nil)
	for _, l := range b.late {
		dst = append(dst, l.Stat)
	}
	clear(b.late)
	b.late = b.late[:0]
	return dst
}
