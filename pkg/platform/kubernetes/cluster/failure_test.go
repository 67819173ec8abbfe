package cluster

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/podfailure"
)

// pullingPod is a pod whose app image cannot be pulled, as a kubelet
// reports it (the status's image is what the spec asked for).
func pullingPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello-1", Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: "ebb.dev/nosuch:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}},
			{Name: "queue-proxy", Image: "ebb.dev/queueproxy:dev"},
		}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, PodIP: "10.0.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "app", Image: "ebb.dev/nosuch:1", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
					Reason: "ErrImagePull", Message: "failed to pull and unpack image \"ebb.dev/nosuch:1\": not found"}}},
				{Name: "queue-proxy", Image: "ebb.dev/queueproxy:dev", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			}},
	}
}

func TestStartFailureThroughTheTransforms(t *testing.T) {
	d := &appsv1.Deployment{}
	for name, transform := range map[string]func(any) (any, error){"PodTransform": PodTransform, "PodTransformWithRequests": PodTransformWithRequests()} {
		t.Run(name, func(t *testing.T) {
			slim, err := transform(pullingPod())
			if err != nil {
				t.Fatal(err)
			}
			f, ok := StartFailure(nil, d, []*corev1.Pod{slim.(*corev1.Pod)})
			if !ok || f.Reason != podfailure.ReasonImagePullFailed || f.Container != "app" ||
				!strings.Contains(f.Message, `image ebb.dev/nosuch:1 (container app) cannot be pulled: ErrImagePull: failed to pull`) {
				t.Errorf("StartFailure = %+v, %v; want the app's image pull failure", f, ok)
			}
			if name == "PodTransformWithRequests" {
				cs := slim.(*corev1.Pod).Spec.Containers
				if len(cs) != 2 || cs[0].Resources.Requests.Cpu().MilliValue() != 100 || cs[1].Resources.Requests != nil {
					t.Errorf("containers %+v: want the app's request kept and none for the queue-proxy", cs)
				}
			}
		})
	}
}

func TestStartFailureFromTheDeployment(t *testing.T) {
	d := &appsv1.Deployment{Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "admission webhook denied the request"}}}}
	f, ok := StartFailure(nil, d, nil)
	if !ok || f.Reason != podfailure.ReasonPodsNotCreated || !strings.Contains(f.Message, "FailedCreate: admission webhook denied") {
		t.Errorf("StartFailure = %+v, %v; want PodsNotCreated", f, ok)
	}
	ready := pullingPod()
	ready.Status.Conditions[0].Status = corev1.ConditionTrue
	slim, _ := PodTransform(ready)
	if sp := slim.(*corev1.Pod); sp.Status.ContainerStatuses != nil || sp.Spec.Containers != nil {
		t.Errorf("a ready pod keeps its container statuses %+v: want none", sp.Status.ContainerStatuses)
	}
	if f, ok := StartFailure(nil, &appsv1.Deployment{}, []*corev1.Pod{slim.(*corev1.Pod)}); ok {
		t.Errorf("a ready pod: failing %+v", f)
	}
}

// crashedPod is a pod whose app was OOM-killed (or, oom false, exited
// 1) after it had been ready: its Ready condition went False when the
// run ended, after it began.
func crashedPod(oom bool) *corev1.Pod {
	t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	term := &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
		StartedAt: metav1.NewTime(t0), FinishedAt: metav1.NewTime(t0.Add(40 * time.Second))}
	if oom {
		term.ExitCode, term.Reason = 137, "OOMKilled"
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello-1", Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: "ebb.dev/hello:1", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}},
			{Name: "queue-proxy", Image: "ebb.dev/queueproxy:dev"},
		}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse,
				LastTransitionTime: metav1.NewTime(t0.Add(40 * time.Second))}},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "app", Image: "ebb.dev/hello:1", RestartCount: 3, LastTerminationState: corev1.ContainerState{Terminated: term},
					State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}},
				{Name: "queue-proxy", Image: "ebb.dev/queueproxy:dev", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			}},
	}
}

// TestCrashCausesThroughTheTransforms: what the informer keeps of a pod
// is enough to name a crash as it was: killed for its memory at its
// limit, or a crash after serving.
func TestCrashCausesThroughTheTransforms(t *testing.T) {
	d := &appsv1.Deployment{}
	for name, transform := range map[string]func(any) (any, error){"PodTransform": PodTransform, "PodTransformWithRequests": PodTransformWithRequests()} {
		for _, tc := range []struct {
			oom    bool
			reason string
			part   string
		}{
			{true, podfailure.ReasonContainerOOMKilled, "its memory reached its limit of 64Mi, or the node ran out of memory), after running 40s"},
			{false, podfailure.ReasonContainerCrashedAfterStart, "crashed after it started serving: exit code 1 (Error), after running 40s"},
		} {
			t.Run(name+"/"+tc.reason, func(t *testing.T) {
				slim, err := transform(crashedPod(tc.oom))
				if err != nil {
					t.Fatal(err)
				}
				f, ok := StartFailure(nil, d, []*corev1.Pod{slim.(*corev1.Pod)})
				if !ok || f.Reason != tc.reason || !strings.Contains(f.Message, tc.part) {
					t.Errorf("StartFailure = %+v, %v; want %s saying %q", f, ok, tc.reason, tc.part)
				}
			})
		}
	}
}
