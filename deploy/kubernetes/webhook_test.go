package kubernetes

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/internal/docblock"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/manifest/convert"
	"ebb.dev/ebb/pkg/manifest/inject"
	"ebb.dev/ebb/pkg/platform/kubernetes/webhook"
)

// injected is a pod of d as its ReplicaSet creates it, after the webhook
// (deploy/'s settings and image).
func injected(t *testing.T, d *appsv1.Deployment) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: *d.Spec.Template.ObjectMeta.DeepCopy(), Spec: *d.Spec.Template.Spec.DeepCopy()}
	pod.Labels["pod-template-hash"] = "abc"
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: d.Name + "-abc", Controller: ptr(true)}}
	res, err := inject.Pod(inject.Input{Pod: pod}, inject.DefaultSettings(webhookImage(t)))
	if err != nil {
		t.Fatalf("injecting %s: %v", d.Name, err)
	}
	doc, _ := json.Marshal(pod)
	ops, _ := json.Marshal(res.Patch)
	p, err := jsonpatch.DecodePatch(ops)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(doc)
	if err != nil {
		t.Fatalf("applying the patch: %v", err)
	}
	var patched corev1.Pod
	if err := json.Unmarshal(out, &patched); err != nil {
		t.Fatal(err)
	}
	return &patched
}

func ptr[T any](v T) *T { return &v }

// webhookImage is the image the autoscaler's webhook injects: its
// QUEUE_PROXY_IMAGE (no --webhook-image argument: kustomize rewrites env
// values, not arguments).
func webhookImage(t *testing.T) string {
	t.Helper()
	c := deployment(t, config.AutoscalerName).Spec.Template.Spec.Containers[0]
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--webhook-image") {
			t.Errorf("the autoscaler has %s: kustomize's images would not rewrite it; set %s", a, config.EnvQueueProxyImage)
		}
	}
	for _, e := range c.Env {
		if e.Name == config.EnvQueueProxyImage && e.ValueFrom == nil {
			return e.Value
		}
	}
	t.Fatalf("the autoscaler has no %s value", config.EnvQueueProxyImage)
	return ""
}

// longForm is the Deployment of docs/kubernetes.md's long form.
func longForm(t *testing.T) *appsv1.Deployment {
	t.Helper()
	block, err := docblock.YAML("../../docs/kubernetes.md", "long-form")
	if err != nil {
		t.Fatal(err)
	}
	return strict[appsv1.Deployment](t, block)
}

// TestLongFormIsTheInjection: the long form of docs/kubernetes.md is what
// the webhook makes of the short form: the same pod spec, annotations,
// name; only the template's opt-in label differs.
func TestLongFormIsTheInjection(t *testing.T) {
	short, long := deployment(t, "hello"), longForm(t)
	pod := injected(t, short)
	if diff := cmp.Diff(long.Spec.Template.Spec, pod.Spec); diff != "" {
		t.Errorf("long form vs injected pod spec (-long +injected):\n%s", diff)
	}
	if diff := cmp.Diff(long.Spec.Template.Annotations, short.Spec.Template.Annotations); diff != "" {
		t.Errorf("annotations (-long +short):\n%s", diff)
	}
	if long.Name != short.Name || long.Labels[config.LabelEnabled] != "true" || long.Spec.Template.Labels[config.LabelEnabled] != "" {
		t.Errorf("long form %s labels %v, template %v: want hello, opted in, its template without the injection label",
			long.Name, long.Labels, long.Spec.Template.Labels)
	}
}

// TestConvertSidecarIsTheLongForm: `autoscaler convert --sidecar` writes
// the long form of docs/kubernetes.md (convert.LongForm, the injection
// applied to the template): the same template, labels included.
func TestConvertSidecarIsTheLongForm(t *testing.T) {
	short, long := deployment(t, "hello"), longForm(t)
	got, warnings, err := convert.LongForm(short, webhookImage(t))
	if err != nil || len(warnings) != 0 {
		t.Fatalf("convert.LongForm: %v, warnings %q", err, warnings)
	}
	if diff := cmp.Diff(long.Spec.Template, got.Spec.Template); diff != "" {
		t.Errorf("pod template (-docs/kubernetes.md +convert.LongForm):\n%s", diff)
	}
	if short.Spec.Template.Labels[config.LabelEnabled] != "true" || len(short.Spec.Template.Spec.Containers) != 1 {
		t.Errorf("convert.LongForm changed its input: %+v", short.Spec.Template)
	}
}

// TestWebhookConfiguration: only opted-in pods outside kube-system and
// ebb-system (the handler's own exclusions) are sent (so Ebb down never
// blocks other pods), on creation,
// to the Service that selects the autoscalers on the port they serve the
// webhook on, at the handler's path; the names are the flags' defaults.
func TestWebhookConfiguration(t *testing.T) {
	cfgs := docs(t)["MutatingWebhookConfiguration"]
	if len(cfgs) != 1 {
		t.Fatalf("%d MutatingWebhookConfigurations, want 1", len(cfgs))
	}
	cfg := strict[admissionregistrationv1.MutatingWebhookConfiguration](t, cfgs[0])
	if cfg.Name != config.WebhookConfigName || len(cfg.Webhooks) != 1 {
		t.Fatalf("configuration %s with %d webhooks: want ebb-sidecar-injector (--webhook-config) with one", cfg.Name, len(cfg.Webhooks))
	}
	w := cfg.Webhooks[0]
	if w.FailurePolicy == nil || *w.FailurePolicy != admissionregistrationv1.Fail ||
		w.ObjectSelector == nil || !cmp.Equal(w.ObjectSelector.MatchLabels, map[string]string{config.LabelEnabled: "true"}) ||
		len(w.ObjectSelector.MatchExpressions) != 0 {
		t.Errorf("failurePolicy %v, objectSelector %+v: want Fail for pods labelled %s only", w.FailurePolicy, w.ObjectSelector, config.LabelEnabled)
	}
	ns := w.NamespaceSelector
	if ns == nil || len(ns.MatchExpressions) != 1 || ns.MatchExpressions[0].Key != "kubernetes.io/metadata.name" ||
		ns.MatchExpressions[0].Operator != metav1.LabelSelectorOpNotIn ||
		!cmp.Equal(ns.MatchExpressions[0].Values, webhook.DefaultExcludedNamespaces(config.SystemNamespace)) {
		t.Errorf("namespaceSelector %+v: want the namespaces the handler excludes too (%v) left out", ns,
			webhook.DefaultExcludedNamespaces(config.SystemNamespace))
	}
	if w.SideEffects == nil || *w.SideEffects != admissionregistrationv1.SideEffectClassNone || !slices.Equal(w.AdmissionReviewVersions, []string{"v1"}) {
		t.Errorf("sideEffects %v, admissionReviewVersions %v: want None and [v1]", w.SideEffects, w.AdmissionReviewVersions)
	}
	if len(w.Rules) != 1 || !slices.Equal(w.Rules[0].Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}) ||
		!slices.Equal(w.Rules[0].Resources, []string{"pods"}) || !slices.Equal(w.Rules[0].APIGroups, []string{""}) {
		t.Errorf("rules %+v: want CREATE of core pods only", w.Rules)
	}
	svc := w.ClientConfig.Service
	if svc == nil || svc.Namespace != config.SystemNamespace || svc.Name != config.WebhookServiceName || svc.Path == nil || *svc.Path != webhook.InjectPath ||
		len(w.ClientConfig.CABundle) != 0 {
		t.Fatalf("clientConfig %+v: want Service ebb-system/ebb-webhook (--webhook-service) at %s, caBundle left to the autoscaler", w.ClientConfig, webhook.InjectPath)
	}
	var service *corev1.Service
	for _, doc := range docs(t)["Service"] {
		if s := strict[corev1.Service](t, doc); s.Name == svc.Name {
			service = s
		}
	}
	as := deployment(t, config.AutoscalerName)
	if service == nil || !cmp.Equal(service.Spec.Selector, as.Spec.Template.Labels) || len(service.Spec.Ports) != 1 ||
		svc.Port == nil || service.Spec.Ports[0].Port != *svc.Port {
		t.Fatalf("Service %s %+v: want it selecting the autoscaler pods on port %v", svc.Name, service, svc.Port)
	}
	var port int32
	for _, p := range as.Spec.Template.Spec.Containers[0].Ports {
		if p.Name == service.Spec.Ports[0].TargetPort.StrVal {
			port = p.ContainerPort
		}
	}
	if port == 0 || !slices.Contains(as.Spec.Template.Spec.Containers[0].Args, "--webhook=:"+strconv.Itoa(int(port))) {
		t.Errorf("the Service targets port %q (%d); the autoscaler's args %v: want --webhook on it", service.Spec.Ports[0].TargetPort.StrVal, port,
			as.Spec.Template.Spec.Containers[0].Args)
	}
}
