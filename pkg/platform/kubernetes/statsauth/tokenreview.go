package statsauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/config"
)

// Defaults of the stats authenticator.
const (
	// DefaultStatsAudience is the audience of the activator's projected
	// ServiceAccount token (deploy/kubernetes/activator.yaml): a token for
	// the API server, or for anything else, is not accepted here.
	DefaultStatsAudience = config.AutoscalerName
	// podNameExtra is the TokenReview extra that names the pod a
	// projected token is bound to.
	podNameExtra = "authentication.kubernetes.io/pod-name"
)

// Options configure a TokenReviewer.
type Options struct {
	Client k8s.Interface
	// Audience the tokens must be issued for; default DefaultStatsAudience.
	Audience string
	// Namespace and ServiceAccount are the activator's: only tokens of
	// system:serviceaccount:NAMESPACE:SERVICEACCOUNT are accepted. Both
	// required.
	Namespace, ServiceAccount string
	// TTL is how long a review is trusted (default 1m); FailureTTL how
	// long a refusal is remembered (default 10s). A revoked token (its pod
	// deleted) is refused within TTL.
	TTL, FailureTTL time.Duration
	// CacheSize bounds the remembered reviews; default 1024.
	CacheSize int
	// ReviewsPerSecond bounds the TokenReviews sent for tokens not known
	// (cache misses), so a flood of made-up tokens cannot flood the API
	// server; default 20 (burst twice that). Past it a report is answered
	// 503. The refreshes of known good tokens have a budget of their own,
	// as large: a flood never spends it.
	ReviewsPerSecond float64
	// SourceReviewsPerSecond bounds the misses of one source address
	// (default 2, burst twice that, for up to CacheSize sources): one
	// client flooding made-up tokens spends its own budget, not the
	// others'.
	SourceReviewsPerSecond float64
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

// TokenReviewer implements autoscaler.Authenticator with the TokenReview
// API (authentication.k8s.io/v1): the activator presents its projected
// ServiceAccount token, and only the activator's ServiceAccount, with the
// audience, is accepted. Reviews are cached by the token's SHA-256 (the
// token itself is neither kept nor logged). Safe for concurrent use.
//
// A token accepted is reviewed again once half its TTL has passed, at
// its next use, on a budget of its own (the answer in hand serves until
// then, and until it expires if the API server cannot answer): an
// activator that reports every second never waits for a review, whatever
// a flood of bad tokens does to the budget of the unknown ones.
type TokenReviewer struct {
	o        Options
	username string
	cache    *lru.Cache[[sha256.Size]byte, review]
	limit    *rate.Limiter // reviews of unknown tokens
	refresh  *rate.Limiter // reviews of tokens accepted, before they expire
	sources  *lru.Cache[string, *rate.Limiter]
}

// review is a remembered answer.
type review struct {
	who     autoscaler.Reporter
	err     error
	expires time.Time
	renew   time.Time // an accepted token's next review (half its TTL)
}

// NewTokenReviewer checks the options and builds the authenticator. It
// starts nothing.
func NewTokenReviewer(o Options) (*TokenReviewer, error) {
	if o.Client == nil || o.Namespace == "" || o.ServiceAccount == "" {
		return nil, errors.New("stats authenticator: a client, the activator's namespace and its ServiceAccount are required")
	}
	if o.Audience == "" {
		o.Audience = DefaultStatsAudience
	}
	if o.TTL <= 0 {
		o.TTL = time.Minute
	}
	if o.FailureTTL <= 0 {
		o.FailureTTL = 10 * time.Second
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 1024
	}
	if o.ReviewsPerSecond <= 0 {
		o.ReviewsPerSecond = 20
	}
	if o.SourceReviewsPerSecond <= 0 {
		o.SourceReviewsPerSecond = 2
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	cache, err := lru.New[[sha256.Size]byte, review](o.CacheSize)
	if err != nil {
		return nil, fmt.Errorf("stats authenticator: %w", err)
	}
	sources, err := lru.New[string, *rate.Limiter](o.CacheSize)
	if err != nil {
		return nil, fmt.Errorf("stats authenticator: %w", err)
	}
	return &TokenReviewer{o: o, cache: cache, sources: sources,
		username: "system:serviceaccount:" + o.Namespace + ":" + o.ServiceAccount,
		limit:    rate.NewLimiter(rate.Limit(o.ReviewsPerSecond), int(2*o.ReviewsPerSecond)+1),
		refresh:  rate.NewLimiter(rate.Limit(o.ReviewsPerSecond), int(2*o.ReviewsPerSecond)+1)}, nil
}

// Authenticate implements autoscaler.Authenticator.
func (t *TokenReviewer) Authenticate(ctx context.Context, token string) (autoscaler.Reporter, error) {
	key := sha256.Sum256([]byte(token))
	now := t.o.Now()
	r, known := t.cache.Get(key)
	switch {
	case known && now.Before(r.expires) && (r.err != nil || now.Before(r.renew)):
		return r.who, r.err
	case known && now.Before(r.expires):
		// Accepted, half its TTL gone: review it again on the refresh
		// budget; the answer in hand serves if it cannot be had now.
		r.renew = now.Add(t.o.FailureTTL) // one refresh at a time, tried again later if it fails
		t.cache.Add(key, r)
		if !t.refresh.AllowN(now, 1) {
			return r.who, nil
		}
		who, err := t.review(ctx, token)
		if !t.remember(key, now, who, err) {
			return r.who, nil // the API server did not answer: the answer in hand serves until it expires
		}
		return who, err // a token revoked since is refused now
	}
	if src := autoscaler.SourceOf(ctx); src != "" {
		l, ok := t.sources.Get(src)
		if !ok {
			l = rate.NewLimiter(rate.Limit(t.o.SourceReviewsPerSecond), int(2*t.o.SourceReviewsPerSecond)+1)
			if prev, found, _ := t.sources.PeekOrAdd(src, l); found {
				l = prev
			}
		}
		if !l.AllowN(now, 1) {
			return autoscaler.Reporter{}, fmt.Errorf("more than %g token reviews per second from %s; not checked", t.o.SourceReviewsPerSecond, src)
		}
	}
	if !t.limit.AllowN(now, 1) {
		return autoscaler.Reporter{}, fmt.Errorf("more than %g token reviews per second; not checked", t.o.ReviewsPerSecond)
	}
	who, err := t.review(ctx, token)
	t.remember(key, now, who, err)
	return who, err // an API error is not remembered: the next report asks again
}

// remember caches an answer (an acceptance for TTL, a refusal for
// FailureTTL) and reports whether it was one to remember (an API error
// is not).
func (t *TokenReviewer) remember(key [sha256.Size]byte, now time.Time, who autoscaler.Reporter, err error) bool {
	switch {
	case err == nil:
		t.cache.Add(key, review{who: who, expires: now.Add(t.o.TTL), renew: now.Add(t.o.TTL / 2)})
	case errors.Is(err, autoscaler.ErrUnauthenticated), errors.Is(err, autoscaler.ErrNotActivator):
		t.cache.Add(key, review{err: err, expires: now.Add(t.o.FailureTTL)})
	default:
		return false
	}
	return true
}

// review asks the API server who the token is.
func (t *TokenReviewer) review(ctx context.Context, token string) (autoscaler.Reporter, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := t.o.Client.AuthenticationV1().TokenReviews().Create(ctx, &authv1.TokenReview{
		Spec: authv1.TokenReviewSpec{Token: token, Audiences: []string{t.o.Audience}}}, metav1.CreateOptions{})
	if err != nil {
		return autoscaler.Reporter{}, fmt.Errorf("token review: %w", err)
	}
	st := res.Status
	switch {
	case !st.Authenticated:
		return autoscaler.Reporter{}, fmt.Errorf("the API server does not know this token for audience %q (%s): %w",
			t.o.Audience, st.Error, autoscaler.ErrUnauthenticated)
	case !slices.Contains(st.Audiences, t.o.Audience):
		return autoscaler.Reporter{}, fmt.Errorf("token is not for audience %q (it is for %v): %w",
			t.o.Audience, st.Audiences, autoscaler.ErrUnauthenticated)
	case st.User.Username != t.username:
		return autoscaler.Reporter{}, fmt.Errorf("%s is not the activator's ServiceAccount %s: %w",
			st.User.Username, t.username, autoscaler.ErrNotActivator)
	}
	who := autoscaler.Reporter{Name: st.User.Username}
	if pods := st.User.Extra[podNameExtra]; len(pods) == 1 {
		who.Pod = pods[0]
	}
	return who, nil
}
