package secondloop

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"
	"ebb.dev/ebb/pkg/stats"
)

// FuzzMarkAgreesWithCopy closes the same seconds through two loops, one
// that marks the stepper before each second that may decide a zero (the
// loop's way) and one that copies it before each (copyBefore, the way
// before marks), and checks that every decision, every replica count
// applied (and the close it was applied at) and every final second are
// the same, close by close. Each close is three bytes of the trace: the
// scraped load (0: no scrape; 1: a scrape of no load, which a revision
// whose pods idle records every second, and whose zero is decided from a
// mark), the ready count with a skip of closes in its
// high bits (missed seconds are gaps), and a report (0: none; below 128
// on time, else late by 1 to 3 seconds, which re-decides a held zero).
func FuzzMarkAgreesWithCopy(f *testing.F) {
	f.Add(uint8(0), []byte{10, 1, 0, 20, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 130, 0, 1, 0, 0, 1, 0})
	f.Add(uint8(0), []byte{30, 1, 0, 30, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0,
		1, 1, 0, 1, 1, 0, 1, 1, 129, 1, 1, 0, 1, 1, 129, 1, 1, 130, 1, 1, 0, 1, 1, 0, 1, 1, 0})
	f.Add(uint8(3), []byte{50, 3, 5, 0, 3, 0, 0, 0x23, 0, 0, 1, 0, 0, 1, 129, 0, 1, 0, 0, 1, 0, 0, 1, 0, 9, 1, 0})
	f.Add(uint8(6), []byte{0, 1, 40, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 131, 0, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, settings uint8, trace []byte) {
		as, err := config.NewAutoscalerFromMap(map[string]string{
			"stable-window":              []string{"6s", "9s", "12s"}[settings%3],
			"scale-to-zero-grace-period": []string{"1s", "4s"}[settings>>2%2],
			"tick-interval":              []string{"1s", "2s"}[settings>>3%2],
		})
		if err != nil {
			t.Fatal(err)
		}
		rev, err := config.NewRevision(as, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		marking, copying := newSink(rev), newSink(rev)
		var lm, lc Loop
		lc.copyBefore = true
		sec := int64(0)
		for i := 0; i+2 < len(trace) && sec < 1000; i += 3 {
			sec += 1 + int64(trace[i+1]>>4)%4
			c := Closing{Sec: sec, Ready: int32(trace[i+1] % 4)}
			if trace[i] != 0 {
				c.Scraped, c.Concurrency, c.RPS = true, float64(trace[i]-1)/10, float64(trace[i]-1)/5
			}
			if r := trace[i+2]; r != 0 {
				st := stats.Stat{Source: stats.SourceActivator, PodName: "act", Period: time.Second,
					AverageConcurrency: float64(r%128) / 20, RequestCount: uint64(r % 7)}
				if r < 128 {
					c.Reports = []stats.Stat{st}
				} else {
					c.Late = []Late{{Sec: sec - 1 - int64(r%3), Stat: st}}
				}
			}
			cc := c
			cc.Reports, cc.Late = append([]stats.Stat(nil), c.Reports...), append([]Late(nil), c.Late...)
			marking.now, copying.now = sec, sec
			lm.Close(&c, marking)
			lc.Close(&cc, copying)
			if d := cmp.Diff(copying.applied, marking.applied); d != "" {
				t.Fatalf("close %d: the replica counts applied differ (-copy +mark):\n%s", sec, d)
			}
			if d := cmp.Diff(copying.at, marking.at); d != "" {
				t.Fatalf("close %d: the closes counts were applied at differ (-copy +mark):\n%s", sec, d)
			}
			if d := cmp.Diff(copying.decided, marking.decided, cmp.AllowUnexported(decider.Decision{})); d != "" {
				t.Fatalf("close %d: the decisions differ (-copy +mark):\n%s", sec, d)
			}
			if d := cmp.Diff(copying.final, marking.final); d != "" {
				t.Fatalf("close %d: the final seconds differ (-copy +mark):\n%s", sec, d)
			}
		}
	})
}
