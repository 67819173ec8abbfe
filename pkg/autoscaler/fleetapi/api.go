package fleetapi

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/autoscaler/bucket"
)

// Owners says who decides for which bucket; the Kubernetes platform's
// bucket Leases (leader.Buckets) are one. Safe for concurrent use.
type Owners interface {
	// Count is the number of buckets.
	Count() int
	// Owner says who decides for bucket i now: this replica (self),
	// another whose API is at admin (host:port), or nobody known (ok
	// false: the bucket is changing hands).
	Owner(i int) (admin string, self, ok bool)
	// Peers are the API addresses of the other live replicas.
	Peers() []string
}

// ForwardedHeader marks a request one replica forwards to another: the
// receiver answers it from its own revisions, never forwards it again.
const ForwardedHeader = "Ebb-Forwarded"

// PartialHeader, on a list gathered from the replicas, names those that
// did not answer: the list lacks their revisions.
const PartialHeader = "Ebb-Partial"

// LocalScope is the value of the scope query parameter that asks a
// replica for its own revisions only (GET /revisions?scope=local).
const LocalScope = "local"

// APIOptions configure API.
type APIOptions struct {
	// Local is this replica's API (autoscaler.Handler, the dashboard,
	// /metrics).
	Local  http.Handler
	Owners Owners
	// Client asks the other replicas (default: a client with a 5s
	// timeout for a list, none for a stream).
	Client *http.Client
	Logger *zap.Logger // nil: no logs
}

// API answers the autoscaler's API for every revision from this replica:
//
//	GET /revisions                        every replica's revisions (GET /revisions?scope=local: this one's)
//	GET /revisions/{ns}/{name}/...        from the replica that decides for the revision
//	GET /events?revision=NS/NAME          the dashboard's stream, from that replica, listing every replica's revisions
//
// Everything else, and every request another replica forwarded, is
// answered by Local. A revision whose bucket changes hands is answered
// 503 with Retry-After: 1.
func API(o APIOptions) http.Handler {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	a := &api{o: o, lists: newLister(o)}
	mux := http.NewServeMux()
	mux.Handle("/", o.Local)
	mux.HandleFunc("GET /revisions", a.serveList)
	mux.HandleFunc("GET /revisions/{ns}/{name}/{what}", a.serveRevision)
	mux.HandleFunc("GET /events", a.serveEvents)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(ForwardedHeader) != "" {
			o.Local.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

type api struct {
	o     APIOptions
	lists *lister
}

// owner is who decides for the revision ns/name: self, or a peer's API
// address; ok false when nobody is known now.
func (a *api) owner(ns, name string) (admin string, self, ok bool) {
	return a.o.Owners.Owner(bucket.Of(ns+"/"+name, a.o.Owners.Count()))
}

func (a *api) serveRevision(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	admin, self, ok := a.owner(ns, name)
	switch {
	case self:
		a.o.Local.ServeHTTP(w, r)
	case !ok:
		changing(w, ns+"/"+name)
	default:
		a.forward(w, r, admin)
	}
}

// changing answers for a revision whose bucket has no known holder.
func changing(w http.ResponseWriter, rev string) {
	w.Header().Set("Retry-After", "1")
	http.Error(w, fmt.Sprintf("revision %s: its bucket is changing hands between autoscaler replicas; ask again in a second", rev),
		http.StatusServiceUnavailable)
}

// forward proxies a request to the replica at admin, marked so that it
// answers from its own revisions.
func (a *api) forward(w http.ResponseWriter, r *http.Request, admin string) {
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.Host = "http", admin, admin
			pr.Out.Header.Set(ForwardedHeader, "1")
		},
		Transport:     a.o.Client.Transport,
		FlushInterval: -1, // a stream goes out as it comes
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			a.o.Logger.Debug("forwarding to the replica that decides failed", zap.String("replica", admin), zap.Error(err))
			http.Error(w, fmt.Sprintf("the autoscaler replica at %s that decides for this revision did not answer: %v", admin, err),
				http.StatusBadGateway)
		},
	}
	p.ServeHTTP(w, r)
}

// scopeLocal reports whether the request asks for this replica alone.
func scopeLocal(r *http.Request) bool { return r.URL.Query().Get("scope") == LocalScope }

// serveList answers GET /revisions: this replica's revisions and every
// live peer's, one list sorted by key.
func (a *api) serveList(w http.ResponseWriter, r *http.Request) {
	if scopeLocal(r) {
		a.o.Local.ServeHTTP(w, r)
		return
	}
	list, missing := a.lists.get(r.Context())
	if len(missing) > 0 {
		w.Header().Set(PartialHeader, strings.Join(missing, "; "))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(list)+1))
	_, _ = w.Write(append(list, '\n')) // the client went away; nothing to do
}

// listTimeout bounds the gathering of one list from the peers.
const listTimeout = 5 * time.Second
