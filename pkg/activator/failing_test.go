package activator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"ebb.dev/ebb/internal/grpcsample"
	"ebb.dev/ebb/pkg/podfailure"
)

func pullFailure() *podfailure.Failure {
	return &podfailure.Failure{Reason: podfailure.ReasonImagePullFailed, Cause: "ErrImagePull", Pod: "hello-1", Container: "app",
		Message: "image ebb.dev/nosuch:1 (container app) cannot be pulled: ErrImagePull: not found; check the image reference"}
}

// TestFailingRevision: a request held for a revision at zero is answered
// 503 naming the revision and the cause as soon as the platform says its
// pods cannot start, long before its queue timeout; new requests get the
// same answer at once; a revision whose replica becomes usable serves
// again, and a usable replica serves whatever the platform says.
func TestFailingRevision(t *testing.T) {
	at := func(f *podfailure.Failure, reps ...Replica) Revision {
		r := rev("hello", 0, reps...)
		r.Timeout, r.Failure = time.Minute, f
		return r
	}
	h := newHarness(t, nil, at(nil))
	type answer struct {
		code            int
		body, retryAfer string
		took            time.Duration
	}
	send := func() <-chan answer {
		ch := make(chan answer, 1)
		go func() {
			began := time.Now()
			code, body, resp := h.do("hello.default", nil)
			ch <- answer{code, body, string(resp.Header.Peek("Retry-After")), time.Since(began)}
		}()
		return ch
	}
	held := send()
	h.eventually("the request is held", func() bool {
		r := h.a.routes.Load().byKey["default/hello"]
		return r != nil && r.throttle.waiting.Load() == 1
	})
	h.platform.set(at(pullFailure()))
	want := "activator: revision default/hello cannot start: image ebb.dev/nosuch:1 (container app) cannot be pulled: ErrImagePull"
	for _, ch := range []<-chan answer{held, send()} {
		a := <-ch
		if a.code != 503 || !strings.HasPrefix(a.body, want) || a.retryAfer != failingRetryAfter || a.took > 30*time.Second {
			t.Errorf("got %d %q (Retry-After %q) after %v; want 503 %q..., Retry-After %s, well before the queue timeout of a minute",
				a.code, a.body, a.retryAfer, a.took, want, failingRetryAfter)
		}
	}
	if n := h.sink.pokeCount(); n == 0 {
		t.Errorf("no poke: a failing revision must still wake the autoscaler (a fixed image then starts)")
	}

	// A usable replica serves, whatever the platform's word.
	h.backend("r1:80", true)
	h.platform.set(at(pullFailure(), Replica{Address: "r1:80", Ready: true}))
	h.eventually("the replica is usable", func() bool { return len(h.a.routes.Load().byKey["default/hello"].throttle.set.Load().replicas) == 1 })
	if code, body, _ := h.do("hello.default", nil); code != 200 {
		t.Errorf("with a usable replica: %d %q, want 200", code, body)
	}
	// Back at zero, failing, then fixed: held requests wait for the replica again.
	h.platform.set(at(pullFailure()))
	h.eventually("no replica", func() bool { return len(h.a.routes.Load().byKey["default/hello"].throttle.set.Load().replicas) == 0 })
	if code, _, _ := h.do("hello.default", nil); code != 503 {
		t.Errorf("at zero and failing: %d, want 503", code)
	}
	h.platform.set(at(nil))
	h.eventually("the failure is cleared", func() bool {
		r := h.a.routes.Load().byKey["default/hello"]
		r.throttle.mu.Lock()
		defer r.throttle.mu.Unlock()
		return r.throttle.failing == nil
	})
	fixed := send()
	h.eventually("the request is held again", func() bool { return h.a.routes.Load().byKey["default/hello"].throttle.waiting.Load() == 1 })
	h.platform.set(at(nil, Replica{Address: "r1:80", Ready: true}))
	if a := <-fixed; a.code != 200 {
		t.Errorf("after the fix: %d %q, want 200", a.code, a.body)
	}
}

// TestGRPCFailingRevision: a gRPC call held for a revision whose pods
// cannot start ends with UNAVAILABLE (gRPC's mapping of the 503) whose
// message names the cause, as soon as the platform says so.
func TestGRPCFailingRevision(t *testing.T) {
	r := rev("greeter", 0)
	r.Timeout = time.Minute
	h := newHarness(t, nil, r)
	cc := h.grpcClient("greeter.default")
	done := make(chan error, 1)
	go func() { _, err := grpcsample.Hello(bounded(t), cc, "x"); done <- err }()
	h.eventually("the call is held", func() bool { return h.a.routes.Load().byKey["default/greeter"].throttle.waiting.Load() == 1 })
	r.Failure = pullFailure()
	h.platform.set(r)
	err := <-done
	if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "revision default/greeter cannot start: image ebb.dev/nosuch:1") {
		t.Errorf("Hello for a failing revision: %v; want Unavailable naming the image", err)
	}
}

// TestFailingRevisionLosesItsReplica: a request waiting for a full
// replica of a failing revision is answered 503 once that replica goes
// and none is left.
func TestFailingRevisionLosesItsReplica(t *testing.T) {
	at := func(reps ...Replica) Revision {
		r := rev("hello", 1, reps...)
		r.Timeout, r.Failure = time.Minute, pullFailure()
		return r
	}
	h := newHarness(t, nil, at(Replica{Address: "r1:80", Ready: true}))
	b := h.backend("r1:80", true)
	b.hold = make(chan struct{})
	first := make(chan int, 1)
	go func() { code, _, _ := h.do("hello.default", nil); first <- code }()
	h.eventually("the replica is busy", func() bool { return b.inFlight.Load() == 1 })
	second := make(chan string, 1)
	go func() { code, body, _ := h.do("hello.default", nil); second <- fmt.Sprint(code, " ", body) }()
	h.eventually("the second request waits", func() bool { return h.a.routes.Load().byKey["default/hello"].throttle.waiting.Load() == 1 })
	h.platform.set(at())
	if got := <-second; !strings.HasPrefix(got, "503 activator: revision default/hello cannot start") {
		t.Errorf("the waiting request got %q, want the 503 of a revision that cannot start", got)
	}
	close(b.hold)
	<-first
}

// TestFailingLine: the 503 of a failing revision says what failed as it
// was: pods that cannot start, or pods that started and keep failing.
func TestFailingLine(t *testing.T) {
	for _, tc := range []struct {
		reason, want string
	}{
		{podfailure.ReasonImagePullFailed, "revision default/hello cannot start: M"},
		{podfailure.ReasonContainerCrashing, "revision default/hello cannot start: M"},
		{podfailure.ReasonContainerCrashedAfterStart, "revision default/hello: its pods keep failing: M"},
		{podfailure.ReasonContainerOOMKilled, "revision default/hello: its pods keep failing: M"},
	} {
		if got := failingLine("default/hello", &podfailure.Failure{Reason: tc.reason, Message: "M"}); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.reason, got, tc.want)
		}
	}
}
