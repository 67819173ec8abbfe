package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/inject"
)

// InjectPath is where the webhook answers the API server's AdmissionReviews
// (the MutatingWebhookConfiguration's clientConfig.service.path).
const InjectPath = "/inject"

// ErrBadReview marks a request that is not an admission/v1 AdmissionReview
// of a pod: the API server never sends one, so it is answered 400.
var ErrBadReview = errors.New("not an admission.k8s.io/v1 AdmissionReview of a Pod")

// Review answers one AdmissionReview (the request body) with the
// AdmissionReview to send back: the pod's patch when it is opted in and
// has no sidecar yet, allowed unchanged otherwise, refused (with the field
// and the fix) when it cannot be wired. An error wraps ErrBadReview.
func Review(body []byte, s inject.Settings) ([]byte, error) {
	var in admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("%w: decoding the body: %w", ErrBadReview, err)
	}
	req := in.Request
	switch {
	case in.APIVersion != admissionv1.SchemeGroupVersion.String() || in.Kind != "AdmissionReview":
		return nil, fmt.Errorf("%w: apiVersion %q, kind %q: want admission.k8s.io/v1 AdmissionReview (set admissionReviewVersions: [v1])",
			ErrBadReview, in.APIVersion, in.Kind)
	case req == nil:
		return nil, fmt.Errorf("%w: no request", ErrBadReview)
	case req.UID == "":
		return nil, fmt.Errorf("%w: request.uid is empty", ErrBadReview)
	}
	resp := respond(req, s)
	resp.UID = req.UID
	out := admissionv1.AdmissionReview{TypeMeta: in.TypeMeta, Response: resp}
	return json.Marshal(out)
}

// respond decides on one request.
func respond(req *admissionv1.AdmissionRequest, s inject.Settings) *admissionv1.AdmissionResponse {
	allow := &admissionv1.AdmissionResponse{Allowed: true}
	if req.Resource.Group != "" || req.Resource.Resource != "pods" || req.SubResource != "" || req.Operation != admissionv1.Create {
		// Only pod creation is injected; the configuration asks for
		// nothing else, so anything else passes unchanged.
		return allow
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return deny(fmt.Sprintf("ebb sidecar injection: decoding the pod: %v", err))
	}
	if pod.Labels[config.LabelEnabled] != "true" {
		return allow // not opted in (the objectSelector sends only opted-in pods)
	}
	res, err := inject.Pod(inject.Input{Pod: &pod}, s)
	if err != nil {
		return deny("ebb sidecar injection: " + err.Error())
	}
	allow.Warnings = res.Warnings
	if len(res.Patch) == 0 {
		return allow
	}
	patch, err := json.Marshal(res.Patch)
	if err != nil {
		return deny(fmt.Sprintf("ebb sidecar injection: encoding the patch: %v", err))
	}
	pt := admissionv1.PatchTypeJSONPatch
	allow.Patch, allow.PatchType = patch, &pt
	return allow
}

func deny(msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest, Message: msg}}
}
