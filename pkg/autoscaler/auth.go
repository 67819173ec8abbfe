package autoscaler

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
)

// Reporter is who posted a stats report, as an Authenticator proved it.
type Reporter struct {
	// Name identifies the reporter in rate limits and logs, e.g.
	// "system:serviceaccount:ebb-system:ebb-activator" (never a secret).
	Name string
	// Pod is the reporting pod when the credentials name it (a Kubernetes
	// token bound to a pod); its reports then speak for that pod only,
	// whatever PodName they carry. Empty: the reports' PodName is kept.
	Pod string
}

// key is what rate limits and report coalescing count by: one pod, or one
// identity when the credentials name no pod.
func (r Reporter) key() string {
	if r.Pod != "" {
		return r.Name + "/" + r.Pod
	}
	return r.Name
}

// Authenticator checks the bearer token of a POST /v1/stats. The Kubernetes
// platform checks ServiceAccount tokens with a TokenReview; `autoscaler run`
// compares a per-run secret (SharedSecret). Implementations must be safe
// for concurrent use and must never log the token.
type Authenticator interface {
	// Authenticate returns the reporter the token proves. Its error wraps
	// ErrUnauthenticated when the token proves no one (401),
	// ErrNotActivator when it proves someone who is not an activator (403);
	// any other error means the check itself failed (503).
	Authenticate(ctx context.Context, token string) (Reporter, error)
}

// sourceKey is the context key of a report's source address.
type sourceKey struct{}

// WithSource returns ctx carrying the address a report came from (its
// host, without the port), for an Authenticator's per-source limits.
func WithSource(ctx context.Context, host string) context.Context {
	return context.WithValue(ctx, sourceKey{}, host)
}

// SourceOf is the address WithSource put in ctx; "" when none.
func SourceOf(ctx context.Context) string {
	s, _ := ctx.Value(sourceKey{}).(string)
	return s
}

// StatsGate admits an authenticated report to this replica when it is
// the one that takes it (fleetapi.Gate: the report's bucket is held here).
// It is asked only after the credentials are checked, so that an
// unauthenticated client learns nothing of what this replica holds.
type StatsGate interface {
	// Admit returns done, to call once the report is taken, or a refusal
	// (answered 421 Misdirected Request).
	Admit(r *http.Request) (done func(), refusal string)
}

// Sentinel errors of an Authenticator.
var (
	// ErrUnauthenticated: no credentials, or credentials that prove no one.
	ErrUnauthenticated = errors.New("not authenticated")
	// ErrNotActivator: valid credentials of someone who is not an activator.
	ErrNotActivator = errors.New("not an activator")
)

// SharedSecret is an Authenticator for one secret that only the embedded
// activator knows (`autoscaler run` draws a new one each run). The
// comparison takes the same time whatever the token.
type SharedSecret struct {
	secret []byte
	who    Reporter
}

// NewSharedSecret returns an Authenticator that accepts exactly secret, as
// the reporter named name. The secret must not be empty.
func NewSharedSecret(secret, name string) (*SharedSecret, error) {
	if secret == "" {
		return nil, errors.New("stats secret: must not be empty")
	}
	return &SharedSecret{secret: []byte(secret), who: Reporter{Name: name}}, nil
}

// Authenticate implements Authenticator.
func (s *SharedSecret) Authenticate(_ context.Context, token string) (Reporter, error) {
	if subtle.ConstantTimeCompare([]byte(token), s.secret) != 1 {
		return Reporter{}, ErrUnauthenticated
	}
	return s.who, nil
}

// bearerToken returns the token of an "Authorization: Bearer TOKEN" header,
// and false when there is none.
func bearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
