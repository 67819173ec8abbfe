package cluster

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/config"
)

func TestTimeoutOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []corev1.EnvVar
		want time.Duration
	}{
		{"none: Knative's default", nil, 300 * time.Second},
		{"the sidecar's literal value", []corev1.EnvVar{{Name: config.EnvRevisionTimeout, Value: "30"}}, 30 * time.Second},
		{"fractions of a second", []corev1.EnvVar{{Name: config.EnvRevisionTimeout, Value: "1.5"}}, 1500 * time.Millisecond},
		{"not a number", []corev1.EnvVar{{Name: config.EnvRevisionTimeout, Value: "soon"}}, 300 * time.Second},
		{"out of range", []corev1.EnvVar{{Name: config.EnvRevisionTimeout, Value: "3601"}}, 300 * time.Second},
		{"NaN: the queue-proxy's rule refuses it", []corev1.EnvVar{{Name: config.EnvRevisionTimeout, Value: "NaN"}}, 300 * time.Second},
		{"below a millisecond: refused, not 0", []corev1.EnvVar{{Name: config.EnvRevisionTimeout, Value: "1e-300"}}, 300 * time.Second},
		{"from the downward API: unknown here", []corev1.EnvVar{{Name: config.EnvRevisionTimeout, ValueFrom: &corev1.EnvVarSource{}}}, 300 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &appsv1.Deployment{}
			d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app"}, {Name: "queue-proxy", Env: tc.env}}
			if got := TimeoutOf(d); got != tc.want {
				t.Errorf("TimeoutOf = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPodTransformKeepsWhatEbbReads(t *testing.T) {
	now := metav1.Now()
	full := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u", Labels: map[string]string{"app": "a"},
			Annotations: map[string]string{"big": "value"}, ResourceVersion: "7", DeletionTimestamp: &now},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", StartTime: &now,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	want := full.DeepCopy()
	want.Annotations, want.Spec = nil, corev1.PodSpec{}
	got, err := PodTransform(full)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got, _ := PodTransform("not a pod"); got != "not a pod" {
		t.Errorf("PodTransform changed a non-pod: %v", got)
	}
}

// TestPodTransformWithRequests: PodTransform, plus each container's cpu
// and memory requests by name (a container without either left out); pods
// with the same requests share one copy, others do not (ready pods: one
// that is not ready keeps its images too, in a copy of its own:
// TestStartFailureThroughTheTransforms).
func TestPodTransformWithRequests(t *testing.T) {
	q := resource.MustParse
	pod := func(name string, cpu string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: "app:1", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q(cpu), corev1.ResourceMemory: q("64Mi"), corev1.ResourceEphemeralStorage: q("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: q("128Mi")}}},
			{Name: "log", Image: "log:1"},
			{Name: "queue-proxy", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("25m")}}},
		}}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	}
	transform := PodTransformWithRequests()
	got := func(p *corev1.Pod) *corev1.Pod { o, _ := transform(p); return o.(*corev1.Pod) }
	a, b, c := got(pod("a", "100m")), got(pod("b", "100m")), got(pod("c", "200m"))
	want := []corev1.Container{
		{Name: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("100m"), corev1.ResourceMemory: q("64Mi")}}},
		{Name: "queue-proxy", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("25m")}}},
	}
	if diff := cmp.Diff(want, a.Spec.Containers); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}
	if a.Name != "a" || len(a.Spec.Containers) != 2 || &a.Spec.Containers[0] != &b.Spec.Containers[0] || &a.Spec.Containers[0] == &c.Spec.Containers[0] {
		t.Errorf("pods a and b (same requests) should share one copy, c (other requests) its own")
	}
	if cpu := c.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; cpu.Cmp(q("200m")) != 0 {
		t.Errorf("c's cpu request %v, want 200m", cpu.String())
	}
	none := pod("d", "1")
	none.Spec.Containers = none.Spec.Containers[1:2]
	if d := got(none); len(d.Spec.Containers) != 0 {
		t.Errorf("a pod without requests keeps %+v, want no container", d.Spec.Containers)
	}
}

func TestPodReadyAndAddressed(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name             string
		phase            corev1.PodPhase
		ip               string
		ready, deleting  bool
		wantReady, wantA bool
	}{
		{"running and ready", corev1.PodRunning, "10.0.0.1", true, false, true, true},
		{"running, not ready yet: the activator probes it", corev1.PodRunning, "10.0.0.1", false, false, false, true},
		{"pending with an address", corev1.PodPending, "10.0.0.1", true, false, false, true},
		{"no address", corev1.PodRunning, "", true, false, false, false},
		{"terminating", corev1.PodRunning, "10.0.0.1", true, true, false, false},
		{"succeeded", corev1.PodSucceeded, "10.0.0.1", true, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := corev1.ConditionFalse
			if tc.ready {
				st = corev1.ConditionTrue
			}
			p := &corev1.Pod{Status: corev1.PodStatus{Phase: tc.phase, PodIP: tc.ip,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}}}
			if tc.deleting {
				p.DeletionTimestamp = &now
			}
			if got := PodReady(p); got != tc.wantReady {
				t.Errorf("PodReady = %v, want %v", got, tc.wantReady)
			}
			if got := PodAddressed(p); got != tc.wantA {
				t.Errorf("PodAddressed = %v, want %v", got, tc.wantA)
			}
		})
	}
}

// TestSidecarMissing: an opted-in pod without the queue-proxy is marked
// by both transforms, ready or not (a ready pod's containers are not
// kept); an injected one, a pod that did not opt in (a sidecarless
// revision's) and a pod that did not go through a transform are not.
func TestSidecarMissing(t *testing.T) {
	app := corev1.Container{Name: "app", Image: "app:1", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}
	qp := corev1.Container{Name: config.QueueProxyContainer, Image: "qp:1"}
	pod := func(optIn, ready bool, cs ...corev1.Container) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "a"},
			Annotations: map[string]string{config.PodAnnotationParkedFrom: "1"}}, Spec: corev1.PodSpec{Containers: cs}}
		if optIn {
			p.Labels[config.LabelEnabled] = "true"
		}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		return p
	}
	withRequests := PodTransformWithRequests()
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"opted in, not injected, ready", pod(true, true, app), true},
		{"opted in, not injected, starting", pod(true, false, app), true},
		{"opted in, no container at all", pod(true, true), true},
		{"opted in, injected, ready", pod(true, true, app, qp), false},
		{"opted in, injected, starting", pod(true, false, qp, app), false},
		{"not opted in (sidecarless), ready", pod(false, true, app), false},
		{"the long form: the sidecar written in, no label", pod(false, true, app, qp), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, transform := range map[string]func(any) (any, error){"PodTransform": PodTransform, "PodTransformWithRequests": withRequests} {
				got, err := transform(tc.pod.DeepCopy())
				if err != nil {
					t.Fatal(err)
				}
				slim := got.(*corev1.Pod)
				if SidecarMissing(slim) != tc.want {
					t.Errorf("%s: SidecarMissing = %v, want %v", name, !tc.want, tc.want)
				}
				if slim.Annotations[config.PodAnnotationParkedFrom] != "1" {
					t.Errorf("%s: annotations %v: the parked mark is lost", name, slim.Annotations)
				}
			}
			if SidecarMissing(tc.pod) {
				t.Errorf("SidecarMissing of a pod as the API holds it = true: only a transform marks")
			}
		})
	}
}
