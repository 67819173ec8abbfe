package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/manifest/inject"
	"ebb.dev/ebb/pkg/stats"
)

// InjectPath is where the webhook answers the API server's AdmissionReviews
// (the MutatingWebhookConfiguration's clientConfig.service.path).
const InjectPath = "/inject"

// errBadReview marks a request that is not an admission/v1 AdmissionReview
// of a pod: the API server never sends one, so it is answered 400.
var errBadReview = errors.New("not an admission.k8s.io/v1 AdmissionReview of a Pod")

// Policy is what the webhook injects, and where.
type Policy struct {
	// Settings are the sidecar's.
	Settings inject.Settings
	// ExcludedNamespaces are never injected, whatever a pod's labels: the
	// MutatingWebhookConfiguration's namespaceSelector leaves them out, and
	// the handler holds to it too, so a review that reaches it anyway (a
	// configuration edited by hand, a caller that is not the API server)
	// changes nothing there. DefaultExcludedNamespaces are deploy/'s.
	ExcludedNamespaces []string
	// ProxySecret gives the install's proxy secret (proxysecret.Keeper);
	// each injected sidecar gets its namespace's, derived from it. A pod
	// is refused while it errs. Nil: Settings' ProxySecretName.
	ProxySecret func() (string, error)
}

// DefaultExcludedNamespaces are the namespaces Ebb never injects into:
// kube-system and Ebb's own (system), as deploy/kubernetes/webhook.yaml's
// namespaceSelector says.
func DefaultExcludedNamespaces(system string) []string {
	return []string{metav1.NamespaceSystem, system}
}

// Review answers one AdmissionReview (the request body) with the
// AdmissionReview to send back: the pod's patch when it is opted in and
// has no sidecar yet, allowed unchanged otherwise, refused (with the field
// and the fix) when it cannot be wired. An error wraps ErrBadReview.
func Review(body []byte, p Policy) ([]byte, error) {
	var in admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("%w: decoding the body: %w", errBadReview, err)
	}
	req := in.Request
	switch {
	case in.APIVersion != admissionv1.SchemeGroupVersion.String() || in.Kind != "AdmissionReview":
		return nil, fmt.Errorf("%w: apiVersion %q, kind %q: want admission.k8s.io/v1 AdmissionReview (set admissionReviewVersions: [v1])",
			errBadReview, in.APIVersion, in.Kind)
	case req == nil:
		return nil, fmt.Errorf("%w: no request", errBadReview)
	case req.UID == "":
		return nil, fmt.Errorf("%w: request.uid is empty", errBadReview)
	}
	resp := respond(req, p)
	resp.UID = req.UID
	out := admissionv1.AdmissionReview{TypeMeta: in.TypeMeta, Response: resp}
	return json.Marshal(out)
}

// respond decides on one request.
func respond(req *admissionv1.AdmissionRequest, p Policy) *admissionv1.AdmissionResponse {
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
	if slices.Contains(p.ExcludedNamespaces, req.Namespace) {
		allow.Warnings = []string{fmt.Sprintf("ebb sidecar injection: namespace %q is excluded (Ebb never injects into %s), so the pod "+
			"is created without the queue-proxy and Ebb can neither route nor scale it: run the revision in another namespace",
			req.Namespace, strings.Join(p.ExcludedNamespaces, ", "))}
		return allow
	}
	s := p.Settings
	if p.ProxySecret != nil {
		install, err := p.ProxySecret()
		if err != nil {
			return deny(fmt.Sprintf("ebb sidecar injection: %v; the pod's ReplicaSet tries again (the autoscaler reads or makes "+
				"the Secret %s in its namespace every second until it has it)", err, stats.ProxySecretName))
		}
		// The namespace the API server names, never the object's own.
		s.ProxySecret = stats.NamespaceProxySecret(install, req.Namespace)
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
