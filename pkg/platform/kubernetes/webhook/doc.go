// Package webhook serves Ebb's sidecar injection as a Kubernetes mutating
// admission webhook and manages its TLS.
//
// It owns the HTTP side (Review, Handler: admission.k8s.io/v1
// AdmissionReview in, a JSONPatch from pkg/manifest/inject out), the HTTPS server
// (Server, whose certificate is read at each handshake), and the
// certificates: Plan is the pure rule (a CA and a serving certificate,
// each replaced at two thirds of its life, a CA in two steps so the API
// server always trusts what is served), CertManager the I/O that keeps
// them in a Secret and the MutatingWebhookConfiguration's caBundle current.
//
// It decides nothing about pods (pkg/manifest/inject does) and never blocks a pod
// that is not opted in: the configuration in deploy/kubernetes sends only
// labelled pods outside kube-system and Ebb's namespace, and the handler
// holds to both itself (Policy.ExcludedNamespaces), whatever it is sent
// (docs/kubernetes.md, "Sidecar injection").
package webhook
