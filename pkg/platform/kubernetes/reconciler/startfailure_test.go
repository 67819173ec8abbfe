package reconciler

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
	"ebb.dev/ebb/pkg/podfailure"
)

// crashingPod is a pod of hello whose app exits at start.
func crashingPod(name, waiting string) *corev1.Pod {
	p := readyPod("hello", name, "10.0.0.1")
	p.Status.Conditions[0].Status = corev1.ConditionFalse
	p.Spec.Containers = []corev1.Container{{Name: "app", Image: "ebb.dev/hello:1"}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "ebb.dev/hello:1", RestartCount: 2,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waiting}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}}}
	return p
}

// TestStartFailureEventsAndStatus: a revision whose pod crashes at start
// gets one Warning Event (not one per change of the kubelet's cause) and
// Failure says why; the failure stays while the pod goes (scaled to zero);
// a ready pod clears it with a Normal Event.
func TestStartFailureEventsAndStatus(t *testing.T) {
	ctx := context.Background()
	h := start(t, Options{}, deployment("hello", 1, nil), crashingPod("hello-1", "CrashLoopBackOff"))
	eventually(t, "the failure is seen", func() bool { _, ok := h.p.Failure(hello); return ok })
	f, _ := h.p.Failure(hello)
	if f.Reason != podfailure.ReasonContainerCrashing || !strings.Contains(f.Message, "container app (image ebb.dev/hello:1) exits at start: exit code 2") {
		t.Errorf("Failure = %+v, want the app's crash", f)
	}
	between := crashingPod("hello-1", "")
	between.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	if _, err := h.client.CoreV1().Pods("default").UpdateStatus(ctx, between, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.client.CoreV1().Pods("default").Delete(ctx, "hello-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pod is gone from the cache", func() bool { return len(h.p.inf.podsOf(mustDeployment(t, h))) == 0 })
	if _, ok := h.p.Failure(hello); !ok {
		t.Errorf("the failure was forgotten with its pod; want it kept until a pod is ready or the template changes")
	}
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, readyPod("hello", "hello-2", "10.0.0.2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the failure is cleared", func() bool { _, ok := h.p.Failure(hello); return !ok })
	var warnings, ready []string
	for _, e := range h.events() {
		switch {
		case strings.HasPrefix(e, "Warning "+podfailure.ReasonContainerCrashing+" pods cannot start: container app"):
			warnings = append(warnings, e)
		case strings.HasPrefix(e, "Normal "+reasonPodsReady):
			ready = append(ready, e)
		}
	}
	if len(warnings) != 1 || len(ready) != 1 {
		t.Errorf("Warning events %q, PodsReady events %q: want one of each", warnings, ready)
	}
}

func mustDeployment(t *testing.T, h *harness) *appsv1.Deployment {
	t.Helper()
	d, err := h.p.deployment(hello)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestStartFailureClearedByANewTemplate: a revision that failed and went
// to zero says so until its pod template changes (a new generation).
func TestStartFailureClearedByANewTemplate(t *testing.T) {
	ctx := context.Background()
	d := deployment("hello", 1, nil)
	d.Generation = 1
	h := start(t, Options{}, d, crashingPod("hello-1", "CrashLoopBackOff"))
	eventually(t, "the failure is seen", func() bool { _, ok := h.p.Failure(hello); return ok })
	if err := h.client.CoreV1().Pods("default").Delete(ctx, "hello-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pod is gone from the cache", func() bool { return len(h.p.inf.podsOf(mustDeployment(t, h))) == 0 })
	fixed := mustDeployment(t, h).DeepCopy()
	fixed.Generation = 2
	if _, err := h.client.AppsV1().Deployments("default").Update(ctx, fixed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the failure is cleared by the new template", func() bool { _, ok := h.p.Failure(hello); return !ok })
}

// TestOOMKillEvent: an app killed for its memory after its pod had been
// ready gets a Warning Event of its own reason, saying the pods keep
// failing, the limit and the fix, never "exits at start".
func TestOOMKillEvent(t *testing.T) {
	p := crashingPod("hello-1", "CrashLoopBackOff")
	started := metav1.NewTime(time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC))
	finished := metav1.NewTime(started.Add(30 * time.Second))
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
	p.Status.Conditions[0].LastTransitionTime = finished
	p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled",
		StartedAt: started, FinishedAt: finished}
	h := start(t, Options{}, deployment("hello", 1, nil), p)
	eventually(t, "the failure is seen", func() bool { _, ok := h.p.Failure(hello); return ok })
	want := "Warning " + podfailure.ReasonContainerOOMKilled + " pods keep failing: container app (image ebb.dev/hello:1) was killed for its memory " +
		"(OOMKilled, exit code 137: its memory reached its limit of 64Mi"
	eventually(t, "the Event", func() bool {
		for _, e := range h.events() {
			if strings.HasPrefix(e, want) && strings.Contains(e, "raise the container's memory limit") && !strings.Contains(e, "exits at start") {
				return true
			}
		}
		return false
	})
}

// TestStalledStartReported: a woken revision's pod placed on a node whose
// kubelet never answers (no container status, no news) is reported once
// the bound passes, with no event from the cluster to trigger it: a
// Warning Event PodNotStarting and Failure (Pending: requests wait).
func TestStalledStartReported(t *testing.T) {
	p := readyPod("hello", "hello-1", "")
	p.Spec.NodeName = "ebb-real-0"
	p.Status.Phase = corev1.PodPending
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	h := start(t, Options{StartStall: 1500 * time.Millisecond}, deployment("hello", 1, nil), p)
	if _, ok := h.p.Failure(hello); ok {
		t.Fatal("reported before the bound")
	}
	eventually(t, "the stall is reported", func() bool { _, ok := h.p.Failure(hello); return ok })
	f, _ := h.p.Failure(hello)
	if f.Reason != podfailure.ReasonPodNotStarting || !f.Pending || !strings.Contains(f.Message, "placed on node ebb-real-0") {
		t.Errorf("Failure = %+v, want %s, pending, naming the node", f, podfailure.ReasonPodNotStarting)
	}
	eventually(t, "the Event", func() bool {
		for _, e := range h.events() {
			if strings.HasPrefix(e, "Warning "+podfailure.ReasonPodNotStarting+" pods cannot start yet: pod hello-1 was placed on node ebb-real-0") {
				return true
			}
		}
		return false
	})
}

// TestCrashAfterStartSticks: once the app served under a pod template, a
// later crash before the kubelet saw the pod ready (a fast crash under
// load) keeps the reason ContainerCrashedAfterStart, also after a scale
// changed the Deployment's generation (the autoscaler scales a crashing
// revision under load): no second Event saying "exits at start".
func TestCrashAfterStartSticks(t *testing.T) {
	ctx := context.Background()
	p := crashingPod("hello-1", "CrashLoopBackOff")
	p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = "5d8f"
	started := metav1.NewTime(time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC))
	p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(started.Add(time.Second))
	p.Status.ContainerStatuses[0].LastTerminationState.Terminated.StartedAt = started
	p.Status.ContainerStatuses[0].LastTerminationState.Terminated.FinishedAt = metav1.NewTime(started.Add(time.Second))
	h := start(t, Options{}, deployment("hello", 1, nil), p)
	eventually(t, "the crash after start", func() bool {
		f, ok := h.p.Failure(hello)
		return ok && f.Reason == podfailure.ReasonContainerCrashedAfterStart
	})
	d := mustDeployment(t, h).DeepCopy() // a scale: a new generation, the same pod template
	two := int32(2)
	d.Spec.Replicas, d.Generation = &two, d.Generation+1
	if _, err := h.client.AppsV1().Deployments("default").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the scale seen", func() bool { return mustDeployment(t, h).Generation == d.Generation })
	again := p.DeepCopy() // the next run died before the pod was seen ready
	again.Status.ContainerStatuses[0].RestartCount = 3
	again.Status.ContainerStatuses[0].LastTerminationState.Terminated.StartedAt = metav1.NewTime(started.Add(20 * time.Second))
	again.Status.ContainerStatuses[0].LastTerminationState.Terminated.FinishedAt = metav1.NewTime(started.Add(21 * time.Second))
	if _, err := h.client.CoreV1().Pods("default").UpdateStatus(ctx, again, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the update seen", func() bool {
		ps := h.p.inf.podsOf(mustDeployment(t, h))
		return len(ps) == 1 && ps[0].Status.ContainerStatuses[0].RestartCount == 3
	})
	h.p.checkStart(mustDeployment(t, h))
	if f, _ := h.p.Failure(hello); f.Reason != podfailure.ReasonContainerCrashedAfterStart || !strings.Contains(f.Message, "restarted 3 times") {
		t.Errorf("after a fast crash: %s %q, want it to stay %s, with the new run's numbers", f.Reason, f.Message,
			podfailure.ReasonContainerCrashedAfterStart)
	}
	for _, e := range h.events() {
		if strings.Contains(e, "exits at start") {
			t.Errorf("an Event says the app exits at start: %q", e)
		}
	}
}

// TestCrashLoopReadyForAMoment: a crash loop whose replica is ready for a
// moment between two crashes keeps its failure (Failure, no PodsReady
// Event, no second Warning): its state and Events stay steady. Ready for
// RecoverSettle, it has recovered (PodsReady).
func TestCrashLoopReadyForAMoment(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	p := crashingPod("hello-1", "")
	p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = "5d8f"
	p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-10 * time.Second))
	p.Status.ContainerStatuses[0].LastTerminationState.Terminated.StartedAt = metav1.NewTime(now.Add(-time.Minute))
	p.Status.ContainerStatuses[0].LastTerminationState.Terminated.FinishedAt = metav1.NewTime(now.Add(-10 * time.Second))
	h := start(t, Options{RecoverSettle: 1500 * time.Millisecond}, deployment("hello", 1, nil), p)
	eventually(t, "the crash after start", func() bool {
		f, ok := h.p.Failure(hello)
		return ok && f.Reason == podfailure.ReasonContainerCrashedAfterStart
	})
	up := p.DeepCopy() // back up between two crashes: ready, for now
	up.Status.Conditions[0] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}
	up.Status.ContainerStatuses[0].Ready = true
	if _, err := h.client.CoreV1().Pods("default").UpdateStatus(ctx, up, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ready pod seen", func() bool {
		ps := h.p.inf.podsOf(mustDeployment(t, h))
		return len(ps) == 1 && cluster.PodReady(ps[0])
	})
	h.p.checkStart(mustDeployment(t, h))
	if f, ok := h.p.Failure(hello); !ok || f.Reason != podfailure.ReasonContainerCrashedAfterStart {
		t.Errorf("ready for a moment: Failure %v %s, want it kept", ok, f.Reason)
	}
	for _, e := range h.events() {
		crash := "Warning " + podfailure.ReasonContainerCrashedAfterStart
		if strings.HasPrefix(e, "Normal "+reasonPodsReady) || strings.HasPrefix(e, "Warning ") && !strings.HasPrefix(e, crash) {
			t.Errorf("an Event while the crash loop goes on: %q", e)
		}
	}
	eventually(t, "recovered after the settle time", func() bool { _, ok := h.p.Failure(hello); return !ok })
	eventually(t, "the PodsReady Event", func() bool {
		for _, e := range h.events() {
			if strings.HasPrefix(e, "Normal "+reasonPodsReady) {
				return true
			}
		}
		return false
	})
}
