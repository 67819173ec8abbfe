package reconciler

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"ebb.dev/ebb/pkg/config"
)

// optedInPod is a ready pod of hello labelled for injection, with the
// queue-proxy or (bare) without.
func optedInPod(name, ip string, injected bool) *corev1.Pod {
	p := readyPod("hello", name, ip)
	p.Labels[config.LabelEnabled] = "true"
	p.Spec.Containers = []corev1.Container{{Name: "app"}}
	if injected {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: config.QueueProxyContainer})
	}
	return p
}

// sidecarEvents are the harness's SidecarMissing Events so far.
func sidecarEvents(h *harness) []string {
	var out []string
	for _, e := range h.events() {
		if strings.HasPrefix(e, "Warning "+reasonSidecarMissing+" ") {
			out = append(out, e)
		}
	}
	return out
}

// TestSidecarMissingEvent: a pod of an opted-in revision that runs
// without the queue-proxy (made while the webhook was not there) gets a
// Warning Event on the Deployment naming it, why, and the fix; not again
// while the same pods are bare; again when another one is; and the
// revision is forgotten once none is.
func TestSidecarMissingEvent(t *testing.T) {
	ctx := context.Background()
	sidecarless := readyPod("hello", "hello-0", "10.0.0.9") // not opted in: a sidecarless revision's kind of pod
	sidecarless.Spec.Containers = []corev1.Container{{Name: "app"}}
	h := start(t, Options{}, deployment("hello", 3, nil), optedInPod("hello-1", "10.0.0.1", true), optedInPod("hello-2", "10.0.0.2", false), sidecarless)
	var got []string
	eventually(t, "the SidecarMissing Event", func() bool { got = append(got, sidecarEvents(h)...); return len(got) > 0 })
	want := "Warning SidecarMissing 1 of 3 pods run without the queue-proxy (hello-2): the sidecar injection webhook never saw them"
	if len(got) != 1 || !strings.HasPrefix(got[0], want) ||
		!strings.HasSuffix(got[0], "failurePolicy Fail, then replace them: kubectl -n default rollout restart deployment hello") {
		t.Fatalf("events %q, want one starting %q and ending with the fix", got, want)
	}

	// The same pods again (a status change): nothing new.
	again := optedInPod("hello-2", "10.0.0.2", false)
	again.Status.Conditions[0].Message = "changed"
	if _, err := h.client.CoreV1().Pods("default").UpdateStatus(ctx, again, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, optedInPod("hello-3", "10.0.0.3", false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got = nil
	eventually(t, "a second Event for a second bare pod", func() bool { got = append(got, sidecarEvents(h)...); return len(got) > 0 })
	if len(got) != 1 || !strings.HasPrefix(got[0], "Warning SidecarMissing 2 of 4 pods run without the queue-proxy (hello-2, hello-3)") {
		t.Errorf("events %q, want one naming hello-2 and hello-3 (none for the status change)", got)
	}

	for _, name := range []string{"hello-2", "hello-3"} {
		if err := h.client.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the revision forgotten once no pod is bare", func() bool {
		h.p.mu.Lock()
		defer h.p.mu.Unlock()
		_, ok := h.p.bare[nsName(hello)]
		return !ok
	})
	if e := sidecarEvents(h); len(e) != 0 {
		t.Errorf("events %q after the bare pods went; want none", e)
	}
}

func TestSidecarMissingMessage(t *testing.T) {
	key := types.NamespacedName{Namespace: "shop", Name: "web"}
	got := sidecarMissingMessage(key, []string{"web-1", "web-2", "web-3", "web-4", "web-5", "web-6", "web-7"}, 9)
	for _, want := range []string{"7 of 9 pods run without the queue-proxy (web-1, web-2, web-3, web-4, web-5 and 2 more)",
		"MutatingWebhookConfiguration " + config.WebhookConfigName + " was missing",
		"kubectl -n shop rollout restart deployment web"} {
		if !strings.Contains(got, want) {
			t.Errorf("message %q\nwant it to contain %q", got, want)
		}
	}
	if len(got) > eventMessageMax {
		t.Errorf("message of %d bytes, above the Events' %d", len(got), eventMessageMax)
	}
}
