package statsauth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/config"
)

const activatorUser = "system:serviceaccount:" + config.SystemNamespace + ":" + config.ActivatorName

// fakeReviews answers TokenReviews from a table of tokens and counts them.
type fakeReviews struct {
	mu      sync.Mutex
	status  map[string]authv1.TokenReviewStatus
	asked   []authv1.TokenReviewSpec
	failing bool
}

func (f *fakeReviews) react(a k8stesting.Action) (bool, runtime.Object, error) {
	tr := a.(k8stesting.CreateAction).GetObject().(*authv1.TokenReview)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, tr.Spec)
	if f.failing {
		return true, nil, errors.New("connection refused")
	}
	out := tr.DeepCopy()
	out.Status = f.status[tr.Spec.Token]
	return true, out, nil
}

func (f *fakeReviews) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.asked)
}

func newTestReviewer(t *testing.T, now *time.Time) (*TokenReviewer, *fakeReviews) {
	t.Helper()
	c := fake.NewClientset()
	f := &fakeReviews{status: map[string]authv1.TokenReviewStatus{
		"tok-activator-1": {Authenticated: true, Audiences: []string{"ebb-autoscaler"}, User: authv1.UserInfo{
			Username: activatorUser, Extra: map[string]authv1.ExtraValue{podNameExtra: {"ebb-activator-abc"}}}},
		"tok-for-api":   {Authenticated: false, Error: "token audiences do not match"},
		"tok-wrong-aud": {Authenticated: true, Audiences: []string{"https://kubernetes.default.svc"}, User: authv1.UserInfo{Username: activatorUser}},
		"tok-app":       {Authenticated: true, Audiences: []string{"ebb-autoscaler"}, User: authv1.UserInfo{Username: "system:serviceaccount:default:app"}},
	}}
	c.PrependReactor("create", "tokenreviews", f.react)
	tr, err := NewTokenReviewer(Options{Client: c, Namespace: config.SystemNamespace, ServiceAccount: config.ActivatorName,
		TTL: time.Minute, FailureTTL: 10 * time.Second, ReviewsPerSecond: 5, Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	return tr, f
}

func TestTokenReviewer(t *testing.T) {
	now := time.Unix(1000, 0)
	tr, f := newTestReviewer(t, &now)
	tests := []struct {
		token   string
		want    autoscaler.Reporter
		wantErr error
		msg     string
	}{
		{token: "tok-activator-1", want: autoscaler.Reporter{Name: activatorUser, Pod: "ebb-activator-abc"}},
		{token: "tok-for-api", wantErr: autoscaler.ErrUnauthenticated, msg: `does not know this token for audience "ebb-autoscaler"`},
		{token: "tok-wrong-aud", wantErr: autoscaler.ErrUnauthenticated, msg: `not for audience "ebb-autoscaler"`},
		{token: "tok-app", wantErr: autoscaler.ErrNotActivator, msg: "system:serviceaccount:default:app is not the activator's ServiceAccount " + activatorUser},
	}
	for _, tt := range tests {
		t.Run(tt.token, func(t *testing.T) {
			got, err := tr.Authenticate(context.Background(), tt.token)
			if !errors.Is(err, tt.wantErr) || tt.msg != "" && !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %v, want %v containing %q", err, tt.wantErr, tt.msg)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reporter (-want +got):\n%s", diff)
			}
			if err != nil && strings.Contains(err.Error(), tt.token) {
				t.Errorf("error %q contains the token", err)
			}
		})
	}
	if f.asked[0].Audiences[0] != "ebb-autoscaler" {
		t.Errorf("review asked for audiences %v, want [ebb-autoscaler]", f.asked[0].Audiences)
	}
}

// TestTokenReviewerCache: an accepted token is reviewed once per TTL, a
// refused one once per FailureTTL, an API failure is not remembered, and
// cache misses past ReviewsPerSecond are not sent to the API server.
func TestTokenReviewerCache(t *testing.T) {
	now := time.Unix(1000, 0)
	tr, f := newTestReviewer(t, &now)
	ctx := context.Background()
	auth := func(tok string) error { _, err := tr.Authenticate(ctx, tok); return err }
	for range 3 {
		auth("tok-activator-1")
		auth("tok-app")
	}
	if n := f.count(); n != 2 {
		t.Errorf("%d reviews for 6 reports of 2 tokens, want 2", n)
	}
	now = now.Add(11 * time.Second) // the refusal is forgotten, the acceptance is not
	auth("tok-activator-1")
	auth("tok-app")
	if n := f.count(); n != 3 {
		t.Errorf("%d reviews after the failure TTL, want 3", n)
	}
	now = now.Add(time.Minute)
	f.failing = true
	if err := auth("tok-activator-1"); err == nil || errors.Is(err, autoscaler.ErrUnauthenticated) {
		t.Errorf("API down: %v, want an error that is not a refusal (503)", err)
	}
	f.failing = false
	if err := auth("tok-activator-1"); err != nil {
		t.Errorf("API back: %v", err)
	}
	now = now.Add(time.Hour) // a fresh budget: burst 11
	before := f.count()
	var limited error
	for i := range 50 {
		if err := auth("made-up-" + string(rune('a'+i))); err != nil && !errors.Is(err, autoscaler.ErrUnauthenticated) {
			limited = err
		}
	}
	if sent := f.count() - before; sent > 11 || limited == nil || !strings.Contains(limited.Error(), "token reviews per second") {
		t.Errorf("50 made-up tokens: %d reviews sent (want at most 11), last error %v", sent, limited)
	}
}

// TestTokenReviewerFlood (issue 33, 100 made-up tokens a second at the
// stats port): an activator reporting every second keeps being accepted
// for 3 minutes, past its review's TTL, while made-up tokens flood in,
// from one source or from many (its review is refreshed before it
// expires, on a budget the flood cannot spend); the reviews sent stay
// bounded.
func TestTokenReviewerFlood(t *testing.T) {
	for _, sources := range []int{1, 100} {
		t.Run(fmt.Sprint(sources, " sources"), func(t *testing.T) {
			now := time.Unix(1000, 0)
			tr, f := newTestReviewer(t, &now)
			act := autoscaler.WithSource(context.Background(), "10.0.0.5")
			refused := 0
			for s := range 180 {
				if _, err := tr.Authenticate(act, "tok-activator-1"); err != nil {
					refused++
				}
				for k := range 100 {
					src := autoscaler.WithSource(context.Background(), fmt.Sprint("10.1.0.", k%sources))
					tr.Authenticate(src, fmt.Sprint("made-up-", s, "-", k))
				}
				now = now.Add(time.Second)
			}
			if sources == 1 {
				// A token not seen before (a rotated one) is reviewed on
				// the budget the one flooding source cannot spend.
				if _, err := tr.Authenticate(act, "tok-activator-1-rotated"); err != nil && !errors.Is(err, autoscaler.ErrUnauthenticated) {
					t.Errorf("a new token under a one-source flood: %v, want it reviewed", err)
				}
			}
			if refused > 0 {
				t.Errorf("%d of 180 activator reports refused under the flood", refused)
			}
			if n := f.count(); n > 180*11 {
				t.Errorf("%d reviews sent in 180 s, past the budget", n)
			}
		})
	}
}
