//go:build k8s

package k8s

import (
	"context"
	b64 "encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/learnedstore"
	"ebb.dev/ebb/pkg/scaling/decider"
)

// learnedTimer is how often TestLearnedStateSurvivesFailover invokes its
// revision: 10 idle gaps (more than the decider.LearnedMinGaps the policy
// needs) are learned in about 30 s.
const learnedTimer = 3 * time.Second

// TestLearnedStateSurvivesFailover: a revision with the learned policy,
// invoked on a timer, learns its idle gaps; the replica that holds its
// bucket saves them in the ConfigMap ebb-learned-state-N of Ebb's
// namespace; that replica crashes (SIGKILL: no last save); the bucket's
// next holder restores the history when it creates the revision's decider
// and decides with it at once, its reasons saying that the history was
// restored (a fresh decider would fall back to Knative's rules until it
// had seen decider.LearnedMinGaps gaps).
func TestLearnedStateSurvivesFailover(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "learned")
	key := autoscaler.RevisionKey{Namespace: ns, Name: "timer"}
	ann := map[string]string{config.AnnotationScaleToZeroPolicy: config.ScaleToZeroLearned, config.AnnotationColdStartCost: "30s"}
	createApp(t, appDeployment(t, ns, "timer", ann))
	rc := newRouteClient(t, env.client, ns, "timer")
	waitFor(t, 30*time.Second, "an endpoint behind the Service", func() (bool, string) {
		_, ok := rc.pick()
		to, addrs := route(ctx, ns, "timer")
		return ok, fmt.Sprint(to, addrs)
	})
	var sent atomic.Int32
	var failed errorList
	stop := timer(rc, &sent, &failed)
	defer stop()

	rev, err := config.NewRevision(config.Defaults(), ann, nil)
	if err != nil {
		t.Fatal(err)
	}
	saved := func() (int, string) {
		cm, err := env.client.CoreV1().ConfigMaps(ebbNS).Get(ctx, learnedstore.Name(key), metav1.GetOptions{})
		if err != nil {
			return 0, err.Error()
		}
		v, ok := cm.Data[learnedstore.Key(key)]
		if !ok {
			return 0, fmt.Sprintf("no key %s in %s", learnedstore.Key(key), cm.Name)
		}
		blob, err := b64.StdEncoding.DecodeString(v)
		if err != nil {
			return 0, err.Error()
		}
		n, err := decider.New(rev, time.Now(), 0).RestoreLearned(blob)
		if err != nil {
			return 0, err.Error()
		}
		return n, fmt.Sprintf("%d gaps saved (%d bytes)", n, len(blob))
	}
	waitFor(t, 90*time.Second, "10 idle gaps saved in the learned-state ConfigMap", func() (bool, string) {
		n, state := saved()
		return n >= 10, fmt.Sprintf("%s; %d requests sent", state, sent.Load())
	})
	n, state := saved()
	t.Logf("before the crash: %s", state)

	old, p := ownerProcess(t, ctx, ns, "timer")
	killed := time.Now()
	p.kill(30 * time.Second)
	owner := waitNewOwner(t, ctx, ns, "timer", old)
	t.Logf("%s holds the revision's bucket %v after the crash", owner, time.Since(killed).Round(100*time.Millisecond))

	var restored autoscaler.DecisionView
	waitFor(t, 20*time.Second, "a decision of the new owner from the restored history", func() (bool, string) {
		decs, err := revisionDecisions(ctx, ns, "timer")
		if err != nil {
			return false, err.Error()
		}
		for _, d := range decs {
			for _, r := range d.Reasons {
				if d.Time.After(killed) && strings.Contains(r.Message, "history restored") {
					restored = d
					return true, ""
				}
				if d.Time.After(killed) && r.Code == string(decider.LearnedFallback) {
					t.Errorf("the new owner fell back to Knative's rules: %s", r.Message)
				}
			}
		}
		return false, fmt.Sprintf("%d decisions: %+v", len(decs), decs)
	})
	t.Logf("the new owner's decision at %s: %+v", restored.Time.Format(time.TimeOnly), restored.Reasons)
	if after, state := saved(); after < n {
		t.Errorf("after the failover: %s; want at least the %d gaps saved before", state, n)
	}
	stop()
	// That requests survive a failover is TestShardedFleet's subject; the
	// timer only makes the traffic to learn from. On a loaded machine a
	// replica may also lose its bucket before the kill.
	t.Logf("%d requests, %d failed: %v", sent.Load(), len(failed.all()), failed.all())
}

// timer sends one request every learnedTimer until stopped (stop waits
// for the last one).
func timer(rc *routeClient, sent *atomic.Int32, failed *errorList) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
			code, addr, err := rc.get(rctx)
			rcancel()
			sent.Add(1)
			if (err != nil || code != http.StatusOK) && ctx.Err() == nil {
				failed.add(fmt.Errorf("%s at %s via %s: status %d: %v", "request", time.Now().Format("15:04:05.000"), addr, code, err))
			}
			select {
			case <-ctx.Done():
			case <-time.After(learnedTimer):
			}
		}
	})
	var once sync.Once
	return func() { once.Do(func() { cancel(); wg.Wait() }) }
}

// revisionDecisions asks the autoscaler Service (any replica: it
// forwards to the one that decides) for a revision's last decisions.
func revisionDecisions(ctx context.Context, ns, name string) ([]autoscaler.DecisionView, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+env.proxy.addr()+"/revisions/"+ns+"/"+name+"/decisions?limit=20", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET decisions: %s", resp.Status)
	}
	var out autoscaler.DecisionsResponse
	return out.Decisions, json.NewDecoder(resp.Body).Decode(&out)
}

// errorList collects errors from a goroutine for the test to report.
type errorList struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorList) add(err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err)
	l.mu.Unlock()
}

func (l *errorList) all() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}
