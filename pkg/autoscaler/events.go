package autoscaler

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
)

// DefaultMaxEventStreams bounds the concurrent GET /events streams (each
// holds a connection and builds an update every second).
const DefaultMaxEventStreams = 32

// eventWriteTimeout bounds the write of one /events update.
const eventWriteTimeout = 10 * time.Second

// update is what the dashboard receives every second: every revision's
// status, and for the selected revision its chart points since the last
// update and its last decisions.
type update struct {
	Revisions []Status       `json:"revisions"`
	Selected  string         `json:"selected,omitempty"`
	Points    []point        `json:"points,omitempty"`
	Decisions []DecisionView `json:"decisions,omitempty"`
}

// update builds an Update with the selected revision's points after since.
func (a *Autoscaler) update(selected string, since int64) update {
	u := update{Revisions: a.statuses(), Selected: selected}
	key, err := ParseRevisionKey(selected)
	if err != nil {
		return u
	}
	if _, decs, err := a.decisions(key, 12); err == nil {
		u.Points = a.deps.series.points(key, since)
		u.Decisions = decs
	}
	return u
}

// serveSeries answers GET /revisions/{ns}/{name}/series?since=UNIX: the
// chart's points (the last 10 minutes at most).
func (a *Autoscaler) serveSeries(w http.ResponseWriter, r *http.Request) {
	since, _ := strconv.ParseInt(r.URL.Query().Get("since"), 10, 64)
	key := RevisionKey{Namespace: r.PathValue("ns"), Name: r.PathValue("name")}
	if _, _, err := a.decisions(key, 1); err != nil {
		http.Error(w, fmt.Sprintf("revision %s is not autoscaled here; GET /revisions lists those that are", key), http.StatusNotFound)
		return
	}
	writeJSON(w, http.StatusOK, a.deps.series.points(key, since))
}

// serveEvents streams an Update every second as Server-Sent Events
// (GET /events?revision=NS/NAME): the first carries the selected
// revision's whole chart, later ones only the new points. At most
// Options.MaxEventStreams stream at once; more are answered 503.
func (a *Autoscaler) serveEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	select {
	case a.streams <- struct{}{}:
		defer func() { <-a.streams }()
	default:
		w.Header().Set("Retry-After", "10")
		http.Error(w, fmt.Sprintf("too many dashboards: %d /events streams are open, the limit (--max-event-streams); close one or try again later", cap(a.streams)),
			http.StatusServiceUnavailable)
		return
	}
	// The server's write timeout would cut the stream: each update gets a
	// write deadline of its own instead, so a reader that stalls is
	// dropped. The stream reads nothing after its head: no read deadline.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	selected := r.URL.Query().Get("revision")
	var since int64
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		u := a.update(selected, since)
		if n := len(u.Points); n > 0 {
			since = u.Points[n-1].Time
		}
		data, err := json.Marshal(u)
		if err != nil { // never expected: the numbers are kept finite
			a.deps.log.Warn("dashboard update does not encode; stream closed", zap.Error(err))
			fmt.Fprintf(w, "event: error\ndata: encoding the update: %s\n\n", strings.ReplaceAll(err.Error(), "\n", " "))
			return
		}
		_ = rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout)) // a socket deadline: wall time, not the decision clock
		if _, err := fmt.Fprintf(w, "event: update\ndata: %s\n\n", data); err != nil {
			return
		}
		flusher.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}
