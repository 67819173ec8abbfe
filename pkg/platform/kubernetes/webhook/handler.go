package webhook

import (
	"errors"
	"io"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// maxReviewBytes bounds a request body: the API server's own limit on an
// object is 3 MiB, and a review carries the pod once (twice for updates,
// which are not asked for).
const maxReviewBytes = 8 << 20

// Handler serves InjectPath.
type Handler struct {
	Policy Policy
	Log    *zap.Logger
	// Observe, when set, gets each review's duration (a metric).
	Observe func(time.Duration)
}

// ServeHTTP answers a POSTed AdmissionReview; anything else is a 4xx with
// a message, never a panic.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "ebb webhook: POST an admission.k8s.io/v1 AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReviewBytes))
	if err != nil {
		http.Error(w, "ebb webhook: reading the body: "+err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	out, err := Review(body, h.Policy)
	if errors.Is(err, errBadReview) {
		h.Log.Debug("admission review refused", zap.Error(err)) // the caller has the 400; the API server never sends one
		http.Error(w, "ebb webhook: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err != nil {
		h.Log.Error("admission review failed", zap.Error(err))
		http.Error(w, "ebb webhook: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
	if h.Observe != nil {
		h.Observe(time.Since(start))
	}
}
