package autoscaler

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"ebb.dev/ebb/pkg/stats"
)

// API limits.
const (
	// maxBatchBytes bounds one activator report body.
	maxBatchBytes = 1 << 20
	// maxBatchStats bounds the Stats of one report.
	maxBatchStats = 4096
	// defaultDecisions is how many decisions /decisions returns by default.
	defaultDecisions = 20
)

// Handler serves the autoscaler's HTTP API:
//
//	GET  /revisions                          every revision's status (JSON)
//	GET  /revisions/{ns}/{name}/decisions    status and the last decisions, newest first (?limit=N)
//	GET  /revisions/{ns}/{name}/series       the chart: decisions of the last 10 minutes (?since=UNIX)
//	GET  /events?revision=NS/NAME            Server-Sent Events: an Update every second
//	POST /v1/stats                           activator reports (stats.BatchContentType; statsapi.go)
//	GET  /healthz                            "ok"
func (a *Autoscaler) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /revisions", a.serveRevisions)
	mux.HandleFunc("GET /revisions/{ns}/{name}/decisions", a.serveDecisions)
	mux.HandleFunc("GET /revisions/{ns}/{name}/series", a.serveSeries)
	mux.HandleFunc("GET /events", a.serveEvents)
	mux.HandleFunc("POST "+stats.BatchPath, a.serveStats)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	return mux
}

// StatsHandler serves POST /v1/stats and GET /healthz only: for a listener
// of its own that a NetworkPolicy opens to the activators alone.
func (a *Autoscaler) StatsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+stats.BatchPath, a.serveStats)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	return mux
}

func (a *Autoscaler) serveRevisions(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, a.statuses())
}

// DecisionsResponse is the body of GET /revisions/{ns}/{name}/decisions.
type DecisionsResponse struct {
	Status    Status         `json:"status"`
	Decisions []DecisionView `json:"decisions"`
}

func (a *Autoscaler) serveDecisions(w http.ResponseWriter, r *http.Request) {
	limit := defaultDecisions
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			http.Error(w, fmt.Sprintf("limit=%q: must be a whole number of at least 1", s), http.StatusBadRequest)
			return
		}
		limit = n
	}
	key := RevisionKey{Namespace: r.PathValue("ns"), Name: r.PathValue("name")}
	st, decs, err := a.decisions(key, limit)
	if errors.Is(err, ErrUnknownRevision) {
		http.Error(w, fmt.Sprintf("revision %s is not autoscaled here; GET /revisions lists those that are", key), http.StatusNotFound)
		return
	}
	writeJSON(w, http.StatusOK, DecisionsResponse{Status: st, Decisions: decs})
}

// writeJSON encodes v before it writes anything, so an answer is never
// cut to nothing behind a 200: a value that does not encode (never
// expected: the numbers are kept finite) is a 500 that says why.
func writeJSON(w http.ResponseWriter, code int, v any) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, fmt.Sprintf("encoding the answer: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(body, '\n')) // the client went away; nothing to do
}
