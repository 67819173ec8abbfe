// Package config turns the config-autoscaler ConfigMap and a revision's
// template annotations into one validated, immutable configuration: the
// Autoscaler (cluster-wide) and the Revision (effective per revision) that
// the decider runs on.
//
// It owns the key table (name, default, parser, rule, doc of every
// ConfigMap key; see Keys) and the annotation table (Annotations). Both
// drive parsing, validation and the documentation in
// deploy/config-autoscaler.yaml, so the three cannot drift apart.
//
// It is pure: it reads no file, no clock and no environment, logs nothing
// and imports only the standard library and the pure leaves pkg/fielderr (its
// error type) and pkg/behavior (the mirror types of
// Revision.Behavior). Callers decode manifests (pkg/manifest) and pass plain
// maps.
//
// # Document annotations
//
// autoscaling.ebb.dev/behavior (a Kubernetes HPA behavior) and
// autoscaling.ebb.dev/metrics (the HPA class's metric list) are JSON or
// YAML whose parsing needs Kubernetes' types, which the pure tier must not
// import. NewRevision, the one entry point from annotations to a Revision,
// takes their parser as an argument (DocumentParser; package hpa's
// DocumentParser is the one implementation) and returns only complete
// revisions: there is no second step to forget. A program that passes no
// parser gets an error for such an annotation, never a revision that
// silently ignores it.
//
// # Errors
//
// Every problem comes back at once, joined with errors.Join; each is a
// *fielderr.Error (package ebb.dev/ebb/pkg/fielderr) naming the key, the value,
// the rule and the fix:
//
//	config-autoscaler "stable-window" = "3s": must be within [6s, 1h]; set it to a whole number of seconds between 6s and 1h
//
// A value that fails to parse is not also reported by the rules that
// involve other keys, so one mistake gives one error.
//
// # Compatibility with Knative
//
// Values are parsed exactly as Knative parses them (Go's strconv and
// time.ParseDuration, nothing trimmed but pod-autoscaler-class), defaults
// and rules are Knative's, and the resolution of per-revision settings
// follows Knative's reconciler. Ebb deviates on purpose in these places:
//
//   - All errors at once. Knative's ConfigMap validation stops at the first
//     failure; ValidateAnnotations aggregates but sometimes keeps only one
//     (panic-window-percentage, activation-scale).
//   - NaN and ±Inf are rejected wherever a number is read. Knative accepts
//     them because every comparison with NaN is false.
//   - panic-threshold-percentage in the ConfigMap keeps Knative's quirk of
//     having no range (the annotation is limited to [110, 1000]), but a
//     value <= 0 is rejected: every tick would then be a panic tick and the
//     revision could never scale down.
//   - pod-autoscaler-class is checked like the class annotation (a value in
//     the knative.dev domain must be KPA or HPA) and must not be empty;
//     Knative does not check it. An empty class annotation is rejected too.
//   - tick-interval is Ebb's key (the decider's period; Knative's is fixed
//     at 2s and it ignores the key): whole seconds, at least 1s, at most
//     stable-window.
//   - Unknown keys under autoscaling.knative.dev/ and autoscaling.ebb.dev/
//     are rejected, with a "did you mean" hint when a known key is close:
//     Knative ignores them, so a typo silently means the default.
//   - metric-aggregation-algorithm is validated whenever the effective
//     class is KPA. Knative checks it only when the class annotation is
//     present and KPA, so a typo without the class silently means linear.
//   - The metric annotation is checked against the effective class (the
//     class annotation, else pod-autoscaler-class). Knative assumes KPA when
//     the class annotation is absent, even if the cluster default is HPA.
//   - The effective min-scale must be at most the effective max-scale
//     (when above 0), ConfigMap values included. Knative compares the two
//     annotations only, so an annotation min-scale above the ConfigMap's
//     max-scale is accepted and min silently wins.
//   - The initial-scale annotation must fit in an int32 (Knative reads it
//     with Atoi and truncates later).
//   - serving.knative.dev/progress-deadline must be a whole number of
//     seconds of at most 2147483647s, because Kubernetes stores it in
//     progressDeadlineSeconds (an int32).
//   - The HPA class's metric must be concurrency, rps, cpu or memory (the
//     ones Ebb computes); Knative accepts any name a metrics adapter might
//     serve. Its target (Revision.Metrics) is the target annotation as
//     written, as Knative's HPA reconciler does, rounded up to a whole
//     percent for cpu and memory; without a target annotation Knative's HPA
//     gets no metric (so Kubernetes' cpu at 80%), Ebb keeps the chosen
//     metric with 80% (cpu, memory) or the KPA's per-pod target (concurrency,
//     rps).
//   - autoscaling.ebb.dev/container-concurrency carries the revision's
//     containerConcurrency, which Knative reads from the revision spec; it is
//     limited to [0, 1000] like Knative's default
//     container-concurrency-max-limit.
package config
