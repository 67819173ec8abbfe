package podfailure

import (
	"strings"
	"testing"
	"time"
)

func pullPod(name string) Pod {
	return Pod{Name: name, Containers: []Container{
		{Name: "app", Image: "ebb.dev/nosuch:1", WaitingReason: "ImagePullBackOff", WaitingMessage: `Back-off pulling image "ebb.dev/nosuch:1"`},
		{Name: "queue-proxy", Image: "ebb.dev/queueproxy:dev", Ready: false},
	}}
}

func crashPod(name string, waitingReason string) Pod {
	return Pod{Name: name, Containers: []Container{{Name: "app", Image: "ebb.dev/hello:1", WaitingReason: waitingReason,
		Restarts: 3, LastExitCode: 2, LastReason: "Error", LastMessage: "flag provided but not defined: -nope"}}}
}

func unschedulable(name string) Pod {
	return Pod{Name: name, Unschedulable: "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: " +
		"1 No preemption victims found for incoming pod."}
}

func TestClassify(t *testing.T) {
	starting := Pod{Name: "b-starting", Containers: []Container{{Name: "app", Image: "x", WaitingReason: "ContainerCreating"}}}
	ready := Pod{Name: "c-ready", Ready: true}
	progress := Condition{Type: "Progressing", Status: "False", Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "x-1" has timed out progressing.`}
	replicaFailure := Condition{Type: "ReplicaFailure", Status: "True", Reason: "FailedCreate", Message: `pods "x-1-" is forbidden: exceeded quota`}
	cases := []struct {
		name       string
		pods       []Pod
		conds      []Condition
		want       bool
		reason     string
		cause, pod string
		parts      []string
		pending    bool
	}{
		{name: "no pods", want: false},
		{name: "image cannot be pulled", pods: []Pod{pullPod("a")}, want: true, reason: ReasonImagePullFailed, cause: "ImagePullBackOff", pod: "a",
			parts: []string{"image ebb.dev/nosuch:1 (container app) cannot be pulled: ImagePullBackOff: Back-off pulling", "load the image onto the nodes"}},
		{name: "crash loop", pods: []Pod{crashPod("a", "CrashLoopBackOff")}, want: true, reason: ReasonContainerCrashing, cause: "CrashLoopBackOff", pod: "a",
			parts: []string{"container app (image ebb.dev/hello:1) exits at start: exit code 2 (Error), restarted 3 times: flag provided",
				"kubectl logs a -c app --previous"}},
		{name: "between two crashes", pods: []Pod{crashPod("a", "")}, want: true, reason: ReasonContainerCrashing, cause: "CrashLoopBackOff", pod: "a"},
		{name: "a restarted container that exited 0 is not a crash",
			pods: []Pod{{Name: "a", Containers: []Container{{Name: "app", Restarts: 1, LastReason: "Completed"}}}}},
		{name: "config error", pods: []Pod{{Name: "a", Containers: []Container{{Name: "app", WaitingReason: "CreateContainerConfigError",
			WaitingMessage: `secret "db" not found`}}}}, want: true, reason: reasonContainerConfigError, cause: "CreateContainerConfigError",
			pod: "a", parts: []string{`container app cannot be created: CreateContainerConfigError: secret "db" not found`}},
		{name: "init container", pods: []Pod{{Name: "a", Containers: []Container{{Name: "setup", Init: true, Image: "i", WaitingReason: "RunContainerError"}}}},
			want: true, reason: reasonContainerCannotStart, cause: "RunContainerError", pod: "a", parts: []string{"init container setup (image i) cannot start"}},
		{name: "a ready pod serves", pods: []Pod{pullPod("a"), ready}},
		{name: "a pod still starting gets its chance", pods: []Pod{pullPod("a"), starting}},
		{name: "a deleted pod does not count", pods: []Pod{pullPod("a"), {Name: "b", Deleting: true}}, want: true, reason: ReasonImagePullFailed, pod: "a",
			cause: "ImagePullBackOff"},
		{name: "the first failing pod by name", pods: []Pod{crashPod("z", "CrashLoopBackOff"), pullPod("m")}, want: true, reason: ReasonImagePullFailed,
			cause: "ImagePullBackOff", pod: "m"},
		{name: "progress deadline while a pod starts", pods: []Pod{starting}, conds: []Condition{progress}, want: true, reason: reasonProgressDeadline,
			cause: "ProgressDeadlineExceeded", parts: []string{"no pod became ready within the Deployment's progress deadline: ReplicaSet"}},
		{name: "progress deadline names the pod's failure", pods: []Pod{pullPod("a")}, conds: []Condition{progress}, want: true,
			reason: ReasonImagePullFailed, cause: "ImagePullBackOff", pod: "a"},
		{name: "progress deadline with a ready pod", pods: []Pod{ready}, conds: []Condition{progress}},
		{name: "replica failure without pods", conds: []Condition{replicaFailure}, want: true, reason: ReasonPodsNotCreated, cause: "FailedCreate",
			parts: []string{"its pods cannot be created: FailedCreate: pods \"x-1-\" is forbidden: exceeded quota"}},
		{name: "replica failure while a pod starts", pods: []Pod{starting}, conds: []Condition{replicaFailure}},
		{name: "replica failure resolved", conds: []Condition{{Type: "ReplicaFailure", Status: "False"}}},
		{name: "unschedulable: reported, pending", pods: []Pod{unschedulable("a")}, want: true, pending: true, reason: ReasonUnschedulable,
			cause: "Unschedulable", pod: "a", parts: []string{"pod a cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu.",
				"lower the pod's resource requests", "requests wait for it"}},
		{name: "unschedulable while a pod starts", pods: []Pod{unschedulable("a"), starting}},
		{name: "a pod that cannot start before one waiting for a node", pods: []Pod{unschedulable("a"), pullPod("m")}, want: true,
			reason: ReasonImagePullFailed, cause: "ImagePullBackOff", pod: "m"},
		{name: "unschedulable past the progress deadline: no longer pending", pods: []Pod{unschedulable("a")}, conds: []Condition{progress},
			want: true, reason: ReasonUnschedulable, cause: "Unschedulable", pod: "a",
			parts: []string{"pod a stayed unschedulable past the Deployment's progress deadline: pod a cannot be scheduled: 0/1 nodes"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := Classify(nil, tc.pods, tc.conds)
			if ok != tc.want {
				t.Fatalf("failing %v (%+v), want %v", ok, f, tc.want)
			}
			if !ok {
				return
			}
			if f.Pending != tc.pending {
				t.Errorf("pending %v, want %v", f.Pending, tc.pending)
			}
			if f.Reason != tc.reason || f.Cause != tc.cause || f.Pod != tc.pod {
				t.Errorf("reason %q cause %q pod %q, want %q %q %q", f.Reason, f.Cause, f.Pod, tc.reason, tc.cause, tc.pod)
			}
			for _, p := range tc.parts {
				if !strings.Contains(f.Message, p) {
					t.Errorf("message %q lacks %q", f.Message, p)
				}
			}
		})
	}
}

// TestCrashCauses: a crashed container is named as it died: killed for
// its memory (with its limit, and the fix: raise it), a crash after its
// pod had been ready (it served), or a crash at start.
func TestCrashCauses(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	run := func(c Container, started, finished time.Duration) Container {
		c.LastStartedAt, c.LastFinishedAt = t0.Add(started), t0.Add(finished)
		return c
	}
	app := Container{Name: "app", Image: "ebb.dev/hello:1", WaitingReason: "CrashLoopBackOff", Restarts: 2, LastExitCode: 1, LastReason: "Error"}
	oom := app
	oom.LastExitCode, oom.LastReason, oom.MemoryLimit = 137, "OOMKilled", "64Mi"
	noLimit := oom
	noLimit.MemoryLimit = ""
	between := app
	between.WaitingReason = ""
	cases := []struct {
		name          string
		c             Container
		notReadySince time.Duration // from t0; -1: unknown
		reason        string
		summary       string
		parts         []string
	}{
		{name: "crash at start: never ready in its run", c: run(app, 10*time.Second, 11*time.Second), notReadySince: 0,
			reason: ReasonContainerCrashing, summary: "pods cannot start", parts: []string{"exits at start: exit code 1 (Error), restarted 2 times",
				"fix the app, its command"}},
		{name: "crash after serving: ready during its run", c: run(app, 10*time.Second, 14*time.Second), notReadySince: 14 * time.Second,
			reason: ReasonContainerCrashedAfterStart, summary: "pods keep failing",
			parts: []string{"container app (image ebb.dev/hello:1) crashed after it started serving: exit code 1 (Error), after running 4s, restarted 2 times",
				"kubectl logs a -c app --previous", "under its load or over time"}},
		{name: "between two crashes after serving", c: run(between, 10*time.Second, 20*time.Second), notReadySince: 20 * time.Second,
			reason: ReasonContainerCrashedAfterStart, summary: "pods keep failing"},
		{name: "readiness unknown, a long run", c: run(app, 0, 5*time.Minute), notReadySince: -1, reason: ReasonContainerCrashedAfterStart},
		{name: "readiness unknown, a short run", c: run(app, 0, 2*time.Second), notReadySince: -1, reason: ReasonContainerCrashing},
		{name: "run times unknown", c: app, notReadySince: 20 * time.Second, reason: ReasonContainerCrashing},
		{name: "OOM killed, with its limit", c: run(oom, 10*time.Second, 70*time.Second), notReadySince: 70 * time.Second,
			reason: ReasonContainerOOMKilled, summary: "pods keep failing",
			parts: []string{"was killed for its memory (OOMKilled, exit code 137: its memory reached its limit of 64Mi", "after running 1m0s",
				"raise the container's memory limit (resources.limits.memory)"}},
		{name: "OOM killed at start is still OOM", c: run(oom, 10*time.Second, 11*time.Second), notReadySince: 0, reason: ReasonContainerOOMKilled},
		{name: "OOM killed without a limit", c: run(noLimit, 0, time.Second), notReadySince: -1, reason: ReasonContainerOOMKilled,
			parts: []string{"it has no memory limit: the node ran out of memory"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Pod{Name: "a", Containers: []Container{tc.c}}
			if tc.notReadySince >= 0 {
				p.NotReadySince = t0.Add(tc.notReadySince)
			}
			f, ok := Classify(nil, []Pod{p}, nil)
			if !ok || f.Reason != tc.reason {
				t.Fatalf("failing %v, reason %q (%s), want %q", ok, f.Reason, f.Message, tc.reason)
			}
			if tc.summary != "" && f.Summary() != tc.summary {
				t.Errorf("summary %q, want %q", f.Summary(), tc.summary)
			}
			if f.Cause != "CrashLoopBackOff" {
				t.Errorf("cause %q, want CrashLoopBackOff", f.Cause)
			}
			for _, part := range tc.parts {
				if !strings.Contains(f.Message, part) {
					t.Errorf("message %q lacks %q", f.Message, part)
				}
			}
		})
	}
}

func TestDetailIsBounded(t *testing.T) {
	p := pullPod("a")
	p.Containers[0].WaitingMessage = strings.Repeat("long\nline ", 200)
	f, _ := Classify(nil, []Pod{p}, nil)
	if strings.Contains(f.Message, "\n") || len(f.Message) > maxDetail+400 {
		t.Errorf("message of %d bytes (newline: %v), want one line within the bound", len(f.Message), strings.Contains(f.Message, "\n"))
	}
}

func FuzzClassify(f *testing.F) {
	f.Add("ErrImagePull", "msg", int32(0), int32(0), "", false)
	f.Add("", "", int32(2), int32(1), "Error", true)
	f.Fuzz(func(t *testing.T, reason, msg string, restarts, code int32, last string, ready bool) {
		pods := []Pod{{Name: "a", Ready: ready, Containers: []Container{{Name: "c", WaitingReason: reason, WaitingMessage: msg,
			Restarts: restarts, LastExitCode: code, LastReason: last}}}}
		got, ok := Classify(nil, pods, nil)
		if ok && (ready || got.Reason == "" || got.Message == "" || len(got.Message) > 2*maxDetail+600) {
			t.Fatalf("failing %+v for a pod ready=%v", got, ready)
		}
	})
}

// TestStalled: a revision whose pods were placed on a node that does not
// start them (a kubelet that does not answer) is reported after the
// bound, Pending (requests wait); the answer says when to look again.
func TestStalled(t *testing.T) {
	now := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	const bound = 15 * time.Second
	placed := func(name string, ago time.Duration, cs ...Container) Pod {
		return Pod{Name: name, Node: "ebb-real-0", ScheduledAt: now.Add(-ago), Containers: cs}
	}
	creating := Container{Name: "app", WaitingReason: "ContainerCreating"}
	cases := []struct {
		name        string
		pods        []Pod
		want        bool
		wantRecheck time.Duration
		parts       []string
	}{
		{name: "no pods"},
		{name: "silent kubelet past the bound", pods: []Pod{placed("a", 20*time.Second)}, want: true,
			parts: []string{"pod a was placed on node ebb-real-0 20s ago and none of its containers has started (no container status reported)",
				"kubectl describe node ebb-real-0", "requests wait for it"}},
		{name: "creating past the bound", pods: []Pod{placed("a", 40*time.Second, creating)}, want: true,
			parts: []string{"(waiting: ContainerCreating)"}},
		{name: "within the bound: look again when it passes", pods: []Pod{placed("a", 5*time.Second)}, wantRecheck: 10*time.Second + time.Millisecond},
		{name: "one past, one within", pods: []Pod{placed("a", 20*time.Second), placed("b", 12*time.Second)},
			wantRecheck: 3*time.Second + time.Millisecond},
		{name: "a container ran", pods: []Pod{placed("a", time.Minute, Container{Name: "app", Ran: true})}},
		{name: "an init container completed", pods: []Pod{placed("a", time.Minute, Container{Name: "init", Init: true, Ran: true}, creating)}},
		{name: "a ready pod", pods: []Pod{placed("a", time.Minute), {Name: "b", Ready: true}}},
		{name: "not placed yet: the scheduler's", pods: []Pod{{Name: "a"}}},
		{name: "a deleted pod does not count", pods: []Pod{placed("a", time.Minute), {Name: "b", Deleting: true}}, want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, stalled, recheck := Stalled(tc.pods, now, bound)
			if stalled != tc.want || recheck != tc.wantRecheck {
				t.Fatalf("stalled %v recheck %v (%+v), want %v %v", stalled, recheck, f, tc.want, tc.wantRecheck)
			}
			if stalled && (f.Reason != ReasonPodNotStarting || !f.Pending || f.Summary() != "pods cannot start yet") {
				t.Errorf("failure %+v: want %s, pending", f, ReasonPodNotStarting)
			}
			for _, p := range tc.parts {
				if !strings.Contains(f.Message, p) {
					t.Errorf("message %q lacks %q", f.Message, p)
				}
			}
		})
	}
}

// TestClassifyKeepsACrashAfterServing: under load the activator sends
// a restarted replica requests before the kubelet sees its pod ready, so a
// run that served and died within a second shows in the pod's status as a
// crash at start (its readiness last changed before the run). After a
// crash after serving of the same pod template it is named a crash after
// serving, with the new run's numbers; a new template, another container,
// or no earlier failure is judged from the status alone; an OOM kill stays
// an OOM kill.
func TestClassifyKeepsACrashAfterServing(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	app := Container{Name: "app", Image: "ebb.dev/hello:1", WaitingReason: "CrashLoopBackOff", Restarts: 1, LastExitCode: 1, LastReason: "Error",
		LastStartedAt: t0, LastFinishedAt: t0.Add(30 * time.Second)}
	first := Pod{Name: "a", Template: "5d8f", NotReadySince: t0.Add(30 * time.Second), Containers: []Container{app}}
	prev, ok := Classify(nil, []Pod{first}, nil)
	if !ok || prev.Reason != ReasonContainerCrashedAfterStart {
		t.Fatalf("the first crash: %v %+v, want %s", ok, prev, ReasonContainerCrashedAfterStart)
	}
	fast := app // the next run: served and died in its first second
	fast.Restarts, fast.LastStartedAt, fast.LastFinishedAt = 4, t0.Add(50*time.Second), t0.Add(50*time.Second)
	again := Pod{Name: "a", Template: "5d8f", NotReadySince: t0.Add(30 * time.Second), Containers: []Container{fast}}
	if f, _ := Classify(nil, []Pod{again}, nil); f.Reason != ReasonContainerCrashing {
		t.Fatalf("from its status alone the fast run is %s, want %s (what Classify corrects)", f.Reason, ReasonContainerCrashing)
	}
	f, ok := Classify(&prev, []Pod{again}, nil)
	if !ok || f.Reason != ReasonContainerCrashedAfterStart || f.Summary() != "pods keep failing" {
		t.Fatalf("after a crash after serving: %v %s %q, want %s", ok, f.Reason, f.Summary(), ReasonContainerCrashedAfterStart)
	}
	for _, part := range []string{"keeps crashing after serving", "exit code 1 (Error), after running 0s, restarted 4 times", "kubectl logs a -c app --previous"} {
		if !strings.Contains(f.Message, part) {
			t.Errorf("message %q lacks %q", f.Message, part)
		}
	}
	if g, _ := Classify(&f, []Pod{again}, nil); g != f {
		t.Errorf("a second time: %+v, want the same %+v", g, f)
	}
	other := again
	other.Template = "77aa" // a new pod template: judged afresh
	if g, _ := Classify(&prev, []Pod{other}, nil); g.Reason != ReasonContainerCrashing {
		t.Errorf("a new template: %s, want %s", g.Reason, ReasonContainerCrashing)
	}
	side := again
	side.Containers = []Container{fast}
	side.Containers[0].Name = "sidecar"
	if g, _ := Classify(&prev, []Pod{side}, nil); g.Reason != ReasonContainerCrashing {
		t.Errorf("another container: %s, want %s", g.Reason, ReasonContainerCrashing)
	}
	oom := again
	oom.Containers = []Container{fast}
	oom.Containers[0].LastReason, oom.Containers[0].LastExitCode = "OOMKilled", 137
	if g, _ := Classify(&prev, []Pod{oom}, nil); g.Reason != ReasonContainerOOMKilled {
		t.Errorf("an OOM kill: %s, want %s", g.Reason, ReasonContainerOOMKilled)
	}
	killed := oom // a SIGKILL the runtime did not see as an OOM kill
	killed.Containers = []Container{fast}
	killed.Containers[0].LastReason, killed.Containers[0].LastExitCode, killed.Containers[0].MemoryLimit = "Error", 137, "64Mi"
	if g, _ := Classify(&prev, []Pod{killed}, nil); g.Reason != ReasonContainerCrashedAfterStart {
		t.Errorf("exit 137 after a crash after serving: %s, want %s", g.Reason, ReasonContainerCrashedAfterStart)
	}
	oomPrev, _ := Classify(nil, []Pod{oom}, nil)
	g, _ := Classify(&oomPrev, []Pod{killed}, nil)
	want := "(Error after earlier runs were OOMKilled, exit code 137: its memory reached its limit of 64Mi"
	if g.Reason != ReasonContainerOOMKilled || !strings.Contains(g.Message, want) {
		t.Errorf("exit 137 after an OOM kill: %s %q, want %s", g.Reason, g.Message, ReasonContainerOOMKilled)
	}
	killed.Containers[0].LastExitCode = 1
	if g, _ := Classify(&oomPrev, []Pod{killed}, nil); g.Reason != ReasonContainerCrashedAfterStart {
		t.Errorf("exit 1 after an OOM kill: %s, want %s", g.Reason, ReasonContainerCrashedAfterStart)
	}
	atStart, _ := Classify(nil, []Pod{again}, nil)
	if g, _ := Classify(&atStart, []Pod{again}, nil); g.Reason != ReasonContainerCrashing {
		t.Errorf("after a crash at start: %s, want %s", g.Reason, ReasonContainerCrashing)
	}
}
