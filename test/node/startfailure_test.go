//go:build node

package node

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	"ebb.dev/ebb/pkg/platform/kubernetes/revisionstatus"
)

// answer is what one request got: its status, body and how long it took.
type answer struct {
	code int
	body string
	err  error
	took time.Duration
}

func (a answer) String() string {
	return fmt.Sprintf("%d %q (error %v) after %v", a.code, strings.TrimSpace(a.body), a.err, a.took.Round(time.Millisecond))
}

// getBody sends GET / with Host host to addr and reads the whole answer.
func getBody(addr, host string, timeout time.Duration) answer {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
	req.Host = host
	began := time.Now()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return answer{err: err, took: time.Since(began)}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{code: resp.StatusCode, body: string(b), took: time.Since(began)}
}

// readyCondition is the RevisionAutoscaler's Ready condition ("" and what
// was seen when it has none).
func readyCondition(ctx context.Context, t *testing.T, ns, name string) (status, reason, seen string) {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	o, err := dyn.Resource(revisionstatus.GVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", "", err.Error()
	}
	cs, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range cs {
		if m := c.(map[string]any); m["type"] == "Ready" {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m)
		}
	}
	return "", "", fmt.Sprint(o.Object["status"])
}

// warningEvent is the first Warning Event on the Deployment with reason
// whose message contains part.
func warningEvent(ctx context.Context, ns, name, reason, part string) (string, bool) {
	evs, err := env.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Deployment,involvedObject.name=" + name})
	if err != nil {
		return err.Error(), false
	}
	var seen []string
	for _, e := range evs.Items {
		if e.Type == corev1.EventTypeWarning && e.Reason == reason && strings.Contains(e.Message, part) {
			return e.Message, true
		}
		seen = append(seen, e.Type+" "+e.Reason+": "+e.Message)
	}
	return fmt.Sprintf("%q", seen), false
}

// setApp changes the Deployment's app container (image and args), again
// on a conflict.
func setApp(t *testing.T, ns, name, image string, args []string) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := env.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i, c := range d.Spec.Template.Spec.Containers {
			if c.Name == "app" {
				d.Spec.Template.Spec.Containers[i].Image, d.Spec.Template.Spec.Containers[i].Args = image, args
			}
		}
		_, err = env.client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStartFailure: on the real node, a copy of the example app at zero
// whose image does not exist (ebb.dev/nosuch:1, IfNotPresent: the kubelet
// tries to pull it, and there is no registry), and one whose app exits at
// start (hello with an argument it refuses). A request through the
// activator's Service wakes each and gets a 503 naming the cause
// (ErrImagePull or ImagePullBackOff; the crash) well within the queue
// timeout (300 s; the bound asserted is 120 s); a second request gets it
// at once; the Deployment has the Warning Event and the
// RevisionAutoscaler Ready False with the reason. Fixed, each wakes and
// answers 200.
func TestStartFailure(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "node-startfail")
	type tc struct {
		name, image, reason, want string
		args                      []string
	}
	hello := helloCopy(t, ns, "probe", nil)
	var good string
	var goodArgs []string
	for _, c := range hello.Spec.Template.Spec.Containers {
		if c.Name == "app" {
			good, goodArgs = c.Image, c.Args
		}
	}
	for _, c := range []tc{
		{name: "nopull", image: "ebb.dev/nosuch:1", reason: "ImagePullFailed",
			want: "cannot start: image ebb.dev/nosuch:1 (container app) cannot be pulled: "},
		{name: "crash", image: good, args: []string{"--no-such-flag"}, reason: "ContainerCrashing",
			want: "cannot start: container app (image " + good + ") exits at start: exit code 1 (Error)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := helloCopy(t, ns, c.name, fastToZero)
			for i, ct := range d.Spec.Template.Spec.Containers {
				if ct.Name == "app" {
					d.Spec.Template.Spec.Containers[i].Image, d.Spec.Template.Spec.Containers[i].Args = c.image, c.args
					d.Spec.Template.Spec.Containers[i].ImagePullPolicy = corev1.PullIfNotPresent
				}
			}
			createDeployment(t, d)
			waitZero(t, ns, d.Name, 120*time.Second)
			h := host(ns, d.Name)
			first := getBody(env.activator, h, 200*time.Second)
			// A revision made a moment ago may not be known yet to the
			// activator the Service picked (each learns it from its own
			// watch): its 404 reached no app, so send again, as a client
			// of a new revision would, for up to 30 s.
			for known := time.Now().Add(30 * time.Second); first.code == http.StatusNotFound && time.Now().Before(known); {
				fmt.Printf("node: start failure (%s): %s; sent again\n", c.name, first)
				time.Sleep(200 * time.Millisecond)
				first = getBody(env.activator, h, 200*time.Second)
			}
			fmt.Printf("node: start failure (%s): the waking request got %s\n", c.name, first)
			if first.code != http.StatusServiceUnavailable || !strings.Contains(first.body, "revision "+ns+"/"+c.name+" "+c.want) ||
				first.took > 120*time.Second {
				t.Fatalf("the waking request: %s; want 503 containing %q within 120 s", first, c.want)
			}
			second := getBody(env.activator, h, 60*time.Second)
			fmt.Printf("node: start failure (%s): the next request got %d after %v\n", c.name, second.code, second.took.Round(time.Millisecond))
			if second.code != http.StatusServiceUnavailable || !strings.Contains(second.body, c.want) {
				t.Errorf("the next request: %s; want 503 containing %q", second, c.want)
			}
			waitFor(t, 30*time.Second, "a Warning Event "+c.reason+" on the Deployment", func() (bool, string) {
				msg, ok := warningEvent(ctx, ns, d.Name, c.reason, "pods cannot start: ")
				return ok, msg
			})
			waitFor(t, 30*time.Second, "the RevisionAutoscaler's Ready False, "+c.reason, func() (bool, string) {
				st, reason, seen := readyCondition(ctx, t, ns, d.Name)
				return st == "False" && reason == c.reason, seen
			})

			setApp(t, ns, d.Name, good, goodArgs)
			waitFor(t, 120*time.Second, "the fixed revision answers 200", func() (bool, string) {
				a := getBody(env.activator, h, 60*time.Second)
				return a.code == http.StatusOK, a.String()
			})
			waitFor(t, 30*time.Second, "the RevisionAutoscaler's Ready True", func() (bool, string) {
				st, _, seen := readyCondition(ctx, t, ns, d.Name)
				return st == "True", seen
			})
		})
	}
}
