//go:build k8s

package k8s

import (
	"context"
	b64 "encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"ebb.dev/ebb/internal/docblock"
	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/config"
	kplat "ebb.dev/ebb/pkg/platform/kubernetes/reconciler"
)

func ptr[T any](v T) *T { return &v }

func itoa(i int) string { return strconv.Itoa(i) }

func base64(b []byte) string { return b64.StdEncoding.EncodeToString(b) }

// waitFor polls cond every 200ms until it holds, or fails the test after
// timeout with what and cond's last description of the state.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; last seen: %s", what, timeout, state)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// newNamespace creates a namespace for one test, deleted at its end.
func newNamespace(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	_, err := env.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		env.client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// appDeployment is the long form of docs/kubernetes.md (the example app
// with the queue-proxy written in; the webhook's output) renamed, with the
// annotations changed (an empty value removes one).
func appDeployment(t *testing.T, ns, name string, ann map[string]string) *appsv1.Deployment {
	t.Helper()
	block, err := docblock.YAML("../../docs/kubernetes.md", "long-form")
	if err != nil {
		t.Fatal(err)
	}
	d := renamedApp(t, "docs/kubernetes.md long form", block, ns, name, map[string]string{"app": name}, ann)
	for i, c := range d.Spec.Template.Spec.Containers {
		for j, e := range c.Env {
			if e.Name == config.EnvServingRevision || e.Name == config.EnvServingConfiguration {
				d.Spec.Template.Spec.Containers[i].Env[j].Value = name
			}
		}
	}
	return d
}

// renamedApp decodes the Deployment of an example (what names it), puts
// it in ns as name, selecting and labelling its pods with labels, with
// the annotations ann changed (an empty value removes one).
func renamedApp(t *testing.T, what string, data []byte, ns, name string, labels, ann map[string]string) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	d.Namespace, d.Name = ns, name
	d.Spec.Selector.MatchLabels = map[string]string{"app": name}
	d.Spec.Template.Labels = labels
	for k, v := range ann {
		if v == "" {
			delete(d.Spec.Template.Annotations, k)
		} else {
			d.Spec.Template.Annotations[k] = v
		}
	}
	return &d
}

func createApp(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	if _, err := env.client.AppsV1().Deployments(d.Namespace).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// updateAnnotations changes a Deployment's pod-template annotations, again
// on a conflict (the autoscaler may scale the Deployment meanwhile).
func updateAnnotations(t *testing.T, ns, name string, ann map[string]string) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := env.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for k, v := range ann {
			d.Spec.Template.Annotations[k] = v
		}
		_, err = env.client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func replicas(ctx context.Context, ns, name string) (int32, error) {
	s, err := env.client.AppsV1().Deployments(ns).GetScale(ctx, name, metav1.GetOptions{})
	if err != nil {
		return -1, err
	}
	return s.Spec.Replicas, nil
}

// readyPods counts the Deployment's Running and Ready pods.
func readyPods(ctx context.Context, ns, app string) int {
	pods, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return -1
	}
	n := 0
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
				n++
			}
		}
	}
	return n
}

// route is what a revision's public EndpointSlice says: its route label
// and addresses.
func route(ctx context.Context, ns, name string) (string, []string) {
	sl, err := env.client.DiscoveryV1().EndpointSlices(ns).Get(ctx, kplat.PublicSliceName(name), metav1.GetOptions{})
	if err != nil {
		return "none (" + err.Error() + ")", nil
	}
	var addrs []string
	for _, ep := range sl.Endpoints {
		addrs = append(addrs, ep.Addresses...)
	}
	return sl.Labels[kplat.RouteLabel], addrs
}

// events lists the Events about an object.
func events(ctx context.Context, ns, kind, name string) []corev1.Event {
	sel := fields.Set{"involvedObject.name": name, "involvedObject.kind": kind}.AsSelector().String()
	evs, err := env.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil
	}
	return evs.Items
}

// findEvent returns the first Event about the object of that type and
// reason whose message contains every part.
func findEvent(ctx context.Context, ns, kind, name, typ, reason string, parts ...string) (*corev1.Event, string) {
	evs := events(ctx, ns, kind, name)
	var seen []string
	for i, e := range evs {
		seen = append(seen, e.Type+" "+e.Reason+": "+e.Message)
		if e.Type != typ || reason != "" && e.Reason != reason {
			continue
		}
		all := true
		for _, p := range parts {
			all = all && strings.Contains(e.Message, p)
		}
		if all {
			return &evs[i], ""
		}
	}
	return nil, fmt.Sprintf("%d events: %q", len(evs), seen)
}

// autoscalerStatuses asks the autoscaler Service (any replica: it gathers
// every replica's revisions).
func autoscalerStatuses(ctx context.Context) ([]autoscaler.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+env.proxy.addr()+"/revisions", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /revisions: %s", resp.Status)
	}
	var out []autoscaler.Status
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

// status is one revision's status from the autoscalers.
func status(ctx context.Context, ns, name string) (autoscaler.Status, bool, string) {
	all, err := autoscalerStatuses(ctx)
	if err != nil {
		return autoscaler.Status{}, false, err.Error()
	}
	for _, s := range all {
		if s.Namespace == ns && s.Name == name {
			return s, true, fmt.Sprintf("%+v", s)
		}
	}
	return autoscaler.Status{}, false, fmt.Sprintf("%s/%s not among %d revisions", ns, name, len(all))
}
