//go:build k8s

package k8s

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/scaling/decider"
)

// TestHPACPUWithoutRequest: the HPA walkthrough's revision without
// resources.requests.cpu is accepted and runs, as Kubernetes runs such an
// HPA: its pod serves, and the status (and a Warning Event on the
// Deployment) says ScalingActive False, FailedGetResourceMetric, with the
// container and the fix. A LimitRange then gives new pods a default cpu
// request at admission, which the pod template never shows: once the pod
// is replaced, the autoscaler reads the pod's own request, the metric
// works again, and the revision scales up under load.
func TestHPACPUWithoutRequest(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "hpa-no-request")
	d := cpuWorkDeployment(t, ns, "cpuwork")
	d.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	createApp(t, d)
	waitFor(t, 60*time.Second, "one ready pod", func() (bool, string) {
		n := readyPods(ctx, ns, "cpuwork")
		return n == 1, fmt.Sprintf("%d ready", n)
	})
	waitFor(t, 60*time.Second, "ScalingActive False, FailedGetResourceMetric, with the fix", func() (bool, string) {
		st, _, msg := status(ctx, ns, "cpuwork")
		c := condition(st, decider.ConditionScalingActive)
		return c.Status == "False" && c.Reason == "FailedGetResourceMetric" && strings.Contains(c.Message, `container "app" has no cpu request`) &&
			strings.Contains(c.Message, "set resources.requests.cpu on the container"), msg
	})
	waitFor(t, 30*time.Second, "a Warning Event FailedGetResourceMetric on the Deployment", func() (bool, string) {
		evs, err := env.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=cpuwork"})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == "FailedGetResourceMetric" && strings.Contains(e.Message, "resources.requests.cpu") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events", len(evs.Items))
	})
	if r, err := replicas(ctx, ns, "cpuwork"); err != nil || r != 1 {
		t.Errorf("replicas %d (%v) without a request; want the scale kept at 1", r, err)
	}

	limits := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "cpu-default", Namespace: ns},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}
	if _, err := env.client.CoreV1().LimitRanges(ns).Create(ctx, limits, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=cpuwork"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if err := env.client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 90*time.Second, "ScalingActive True on the new pod's request", func() (bool, string) {
		st, _, msg := status(ctx, ns, "cpuwork")
		return condition(st, decider.ConditionScalingActive).Status == "True" && readyPods(ctx, ns, "cpuwork") == 1, msg
	})
	stop := cpuLoad(t, ns, "cpuwork")
	defer stop()
	waitFor(t, 180*time.Second, "2 or more replicas under load", func() (bool, string) {
		r, err := replicas(ctx, ns, "cpuwork")
		_, _, msg := status(ctx, ns, "cpuwork")
		return err == nil && r >= 2, fmt.Sprintf("%d replicas (%v); status %s", r, err, msg)
	})
	tmpl, err := env.client.AppsV1().Deployments(ns).Get(ctx, "cpuwork", metav1.GetOptions{})
	if err != nil || len(tmpl.Spec.Template.Spec.Containers[0].Resources.Requests) != 0 {
		t.Errorf("the template has requests %v (%v); want none: the pods' requests are the LimitRange's",
			tmpl.Spec.Template.Spec.Containers[0].Resources.Requests, err)
	}
}

// condition is the status's condition of type typ (zero when absent).
func condition(st autoscaler.Status, typ string) decider.Condition {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return decider.Condition{}
}
