package faultfleet

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"ebb.dev/ebb/pkg/config"
)

// timeline is what happened in one schedule, in the order it happened:
// the faults, every change of the API server's Lease records, what each
// replica's leader logged, and the scale writes that landed. A failing
// schedule prints the part of it around the first stale write.
type timeline struct {
	start time.Time
	mu    sync.Mutex
	lines []entry // guarded by mu
}

type entry struct {
	at   time.Duration
	text string
}

// maxEntries bounds a schedule's timeline (about 2,000 writes and 500
// Lease changes in 8 s).
const maxEntries = 50000

func (tl *timeline) add(format string, args ...any) {
	e := entry{at: time.Since(tl.start), text: fmt.Sprintf(format, args...)}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if len(tl.lines) < maxEntries {
		tl.lines = append(tl.lines, e)
	}
}

// around is the timeline from before-back to after-on of at, only the
// lines that contain one of keys.
func (tl *timeline) around(at, back, on time.Duration, keys ...string) string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var sb strings.Builder
	for _, e := range tl.lines {
		if e.at < at-back || e.at > at+on {
			continue
		}
		for _, k := range keys {
			if strings.Contains(e.text, k) {
				fmt.Fprintf(&sb, "  %8.3fs %s\n", e.at.Seconds(), e.text)
				break
			}
		}
	}
	return sb.String()
}

// logger is a replica's leader log, into the timeline.
func (tl *timeline) logger(id string) *zap.Logger {
	enc := zapcore.NewConsoleEncoder(zapcore.EncoderConfig{MessageKey: "msg", LevelKey: "level", EncodeLevel: zapcore.CapitalLevelEncoder,
		EncodeDuration: zapcore.StringDurationEncoder})
	w := zapcore.AddSync(writerFunc(func(p []byte) (int, error) {
		tl.add("%s: %s", id, strings.TrimSpace(string(p)))
		return len(p), nil
	}))
	return zap.New(zapcore.NewCore(enc, w, zap.InfoLevel))
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// recordLeases adds every change of the API server's Lease records to the
// timeline until stop is closed.
func (w *world) recordLeases(stop <-chan struct{}) {
	wi, err := w.leases.Tracker().Watch(leaseGVR, config.SystemNamespace)
	if err != nil {
		w.t.Fatal(err)
	}
	go func() {
		<-stop
		wi.Stop()
	}()
	go func() {
		for ev := range wi.ResultChan() {
			l, ok := ev.Object.(*coordinationv1.Lease)
			if !ok {
				continue
			}
			holder := ptr.Deref(l.Spec.HolderIdentity, "")
			w.tl.add("lease %s %s holder=%q rv=%s", l.Name, strings.ToLower(string(ev.Type)), holder, l.ResourceVersion)
			if ev.Type == watch.Deleted {
				continue
			}
		}
	}()
}
