package main

import (
	"fmt"
	"strings"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/config/hpa"
	"ebb.dev/ebb/pkg/fielderr"
	"ebb.dev/ebb/pkg/manifest"
)

// validateReport is validate's JSON document (--output json), a published
// form that TestValidateSpecExample pins field by field; the
// unexported fields feed the text output and the notes on stderr.
type validateReport struct {
	ConfigMap configMapReport  `json:"configmap"`
	Revisions []revisionReport `json:"revisions"`
	notes     []string
}

type configMapReport struct {
	Valid     bool                `json:"valid"`
	Errors    []string            `json:"errors"`
	Effective *configMapEffective `json:"effective,omitempty"`
	origin    string              // "" when no ConfigMap was given
	config    *config.Autoscaler  // nil when invalid
}

// configMapEffective is the effective ConfigMap; durations in seconds.
type configMapEffective struct {
	EnableScaleToZero                  bool    `json:"enable-scale-to-zero"`
	ContainerConcurrencyTargetFraction float64 `json:"container-concurrency-target-fraction"`
	ContainerConcurrencyTargetDefault  float64 `json:"container-concurrency-target-default"`
	RPSTargetDefault                   float64 `json:"requests-per-second-target-default"`
	TargetBurstCapacity                float64 `json:"target-burst-capacity"`
	StableWindow                       float64 `json:"stable-window"`
	PanicWindowPercentage              float64 `json:"panic-window-percentage"`
	PanicThresholdPercentage           float64 `json:"panic-threshold-percentage"`
	MaxScaleUpRate                     float64 `json:"max-scale-up-rate"`
	MaxScaleDownRate                   float64 `json:"max-scale-down-rate"`
	ScaleToZeroGracePeriod             float64 `json:"scale-to-zero-grace-period"`
	ScaleToZeroPodRetentionPeriod      float64 `json:"scale-to-zero-pod-retention-period"`
	ScaleDownDelay                     float64 `json:"scale-down-delay"`
	ActivatorCapacity                  float64 `json:"activator-capacity"`
	PodAutoscalerClass                 string  `json:"pod-autoscaler-class"`
	InitialScale                       int32   `json:"initial-scale"`
	AllowZeroInitialScale              bool    `json:"allow-zero-initial-scale"`
	MinScale                           int32   `json:"min-scale"`
	MaxScale                           int32   `json:"max-scale"`
	MaxScaleLimit                      int32   `json:"max-scale-limit"`
}

type revisionReport struct {
	Namespace string             `json:"namespace"`
	Name      string             `json:"name"`
	Valid     bool               `json:"valid"`
	Errors    []string           `json:"errors"`
	Effective *revisionEffective `json:"effective,omitempty"`
	origin    string
	kind      string             // what it was read from: "Deployment", "Knative Service", ...
	timeouts  *manifest.Timeouts // a Knative revision's, or a Deployment's that sets one; else nil
	revision  *config.Revision   // nil when invalid
	// warnings are what the revision will run with but should not: each
	// names the field, why and the fix (text: under the revision; JSON: on
	// stderr, so the document keeps its published form).
	warnings []string
}

// revisionEffective is what the decider runs on; durations in seconds.
type revisionEffective struct {
	Class                          string  `json:"class"`
	Metric                         string  `json:"metric"`
	Target                         float64 `json:"target"`
	Total                          float64 `json:"total"`
	PanicThreshold                 float64 `json:"panicThreshold"`
	TargetBurstCapacity            float64 `json:"targetBurstCapacity"`
	StableWindowSeconds            float64 `json:"stableWindowSeconds"`
	PanicWindowSeconds             float64 `json:"panicWindowSeconds"`
	ScaleDownDelaySeconds          float64 `json:"scaleDownDelaySeconds"`
	ScaleToZeroPodRetentionSeconds float64 `json:"scaleToZeroPodRetentionSeconds"`
	InitialScale                   int32   `json:"initialScale"`
	ActivationScale                int32   `json:"activationScale"`
	MinScale                       int32   `json:"minScale"`
	MaxScale                       int32   `json:"maxScale"`
	MaxScaleUpRate                 float64 `json:"maxScaleUpRate"`
	MaxScaleDownRate               float64 `json:"maxScaleDownRate"`
	Aggregation                    string  `json:"aggregation"`
}

func (r *validateReport) valid() bool {
	if !r.ConfigMap.Valid {
		return false
	}
	for _, rev := range r.Revisions {
		if !rev.Valid {
			return false
		}
	}
	return true
}

// buildReport validates the ConfigMap, then every Deployment as a revision
// under it (under the defaults when it is invalid, as a cluster keeps its
// previous, valid settings).
func buildReport(set *manifest.Set) *validateReport {
	rep := &validateReport{Revisions: []revisionReport{}}
	as := rep.checkConfigMap(set)
	seen := map[string]string{}
	for _, d := range set.Deployments {
		id := d.Namespace() + "/" + d.Name()
		if first, dup := seen[id]; dup {
			rep.notef("revision %s at %s is also defined at %s; on a cluster the last one applied wins", id, d.Origin, first)
		}
		seen[id] = d.Origin.String()
		if d.Knative != nil {
			for _, w := range d.Knative.Warnings {
				rep.notef("%s %s at %s: %s", d.Kind(), id, d.Origin, w)
			}
		}
		rep.Revisions = append(rep.Revisions, checkRevision(as, d))
	}
	rep.noteIgnored(set)
	return rep
}

func (r *validateReport) notef(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// checkConfigMap fills r.ConfigMap and returns the settings revisions are
// checked against.
func (r *validateReport) checkConfigMap(set *manifest.Set) *config.Autoscaler {
	cms := set.ConfigMapsNamed(config.ConfigMapName)
	r.ConfigMap = configMapReport{Valid: true, Errors: []string{}}
	switch len(cms) {
	case 0:
		r.ConfigMap.config = config.Defaults()
	case 1:
		r.ConfigMap.origin = cms[0].Origin.String()
		as, err := config.NewAutoscalerFromMap(cms[0].Object.Data)
		r.ConfigMap.config = as
		r.ConfigMap.Errors = errorLines(err)
	default:
		var where []string
		for _, cm := range cms {
			where = append(where, cm.Origin.String())
		}
		r.ConfigMap.Errors = []string{fmt.Sprintf("%s is given %d times (%s); give only one",
			config.ConfigMapName, len(cms), strings.Join(where, "; "))}
	}
	if len(r.ConfigMap.Errors) > 0 {
		r.ConfigMap.Valid, r.ConfigMap.config = false, nil
		if len(set.Deployments) > 0 {
			r.notef("revisions are checked against the default settings because %s is invalid", config.ConfigMapName)
		}
		return config.Defaults()
	}
	r.ConfigMap.Effective = effectiveConfigMap(r.ConfigMap.config)
	return r.ConfigMap.config
}

// checkRevision resolves a Deployment's revision as the autoscaler does:
// config.NewRevision with the behavior and metrics annotations parsed by
// hpa.DocumentParser, every error at once.
func checkRevision(as *config.Autoscaler, d manifest.Deployment) revisionReport {
	rev, err := config.NewRevision(as, d.TemplateAnnotations(), hpa.DocumentParser{})
	rr := revisionReport{
		Namespace: d.Namespace(), Name: d.Name(), Valid: err == nil, Errors: errorLines(err),
		origin: d.Origin.String(), kind: d.Kind(), revision: rev,
	}
	t, terr := d.Timeouts()
	if d.Knative != nil || len(t.Env()) > 0 {
		rr.timeouts = &t
	}
	if d.Knative != nil && len(d.Knative.Errors) > 0 {
		rr.Valid, rr.Errors, rr.revision = false, append(rr.Errors, d.Knative.Errors...), nil
		return rr
	}
	if terr != nil {
		rr.Valid, rr.Errors, rr.revision = false, append(rr.Errors, errorLines(terr)...), nil
		return rr
	}
	problems, warnings := resourceProblems(rev, d)
	if len(problems) > 0 {
		rr.Valid, rr.Errors, rr.revision = false, append(rr.Errors, problems...), nil
		return rr
	}
	rr.warnings = warnings
	if rev != nil {
		rr.Effective = effectiveRevision(rev)
	}
	return rr
}

func (r *validateReport) noteIgnored(set *manifest.Set) {
	for _, cm := range set.ConfigMaps {
		if cm.Object.Name != config.ConfigMapName {
			r.notef("ignored ConfigMap %q at %s: only %s is read", cm.Object.Name, cm.Origin, config.ConfigMapName)
		}
	}
	for _, h := range set.HPAs {
		r.notef("ignored %s HorizontalPodAutoscaler %q at %s: Ebb scales a Deployment by its annotations, not by an HPA object; "+
			"`autoscaler convert` turns the HPA and its Deployment into them", h.APIVersion, h.Name(), h.Origin)
	}
	for _, ig := range set.Ignored {
		r.notef("ignored %s %s %q at %s: validate reads v1 ConfigMap %s, apps/v1 Deployments and %s Services and Configurations",
			ig.APIVersion, ig.Kind, ig.Name, ig.Origin, config.ConfigMapName, manifest.KnativeServingV1)
	}
}

// errorLines turns a joined error into one string per problem; never nil.
func errorLines(err error) []string {
	lines := []string{}
	if fes := fielderr.Errors(err); len(fes) > 0 {
		for _, fe := range fes {
			lines = append(lines, fe.Error())
		}
		return lines
	}
	if err != nil {
		lines = append(lines, strings.Split(err.Error(), "\n")...)
	}
	return lines
}

func effectiveConfigMap(a *config.Autoscaler) *configMapEffective {
	return &configMapEffective{
		EnableScaleToZero:                  a.EnableScaleToZero,
		ContainerConcurrencyTargetFraction: a.ContainerConcurrencyTargetFraction,
		ContainerConcurrencyTargetDefault:  a.ContainerConcurrencyTargetDefault,
		RPSTargetDefault:                   a.RPSTargetDefault,
		TargetBurstCapacity:                a.TargetBurstCapacity,
		StableWindow:                       a.StableWindow.Seconds(),
		PanicWindowPercentage:              a.PanicWindowPercentage,
		PanicThresholdPercentage:           a.PanicThresholdPercentage,
		MaxScaleUpRate:                     a.MaxScaleUpRate,
		MaxScaleDownRate:                   a.MaxScaleDownRate,
		ScaleToZeroGracePeriod:             a.ScaleToZeroGracePeriod.Seconds(),
		ScaleToZeroPodRetentionPeriod:      a.ScaleToZeroPodRetentionPeriod.Seconds(),
		ScaleDownDelay:                     a.ScaleDownDelay.Seconds(),
		ActivatorCapacity:                  a.ActivatorCapacity,
		PodAutoscalerClass:                 a.PodAutoscalerClass,
		InitialScale:                       a.InitialScale,
		AllowZeroInitialScale:              a.AllowZeroInitialScale,
		MinScale:                           a.MinScale,
		MaxScale:                           a.MaxScale,
		MaxScaleLimit:                      a.MaxScaleLimit,
	}
}

func effectiveRevision(r *config.Revision) *revisionEffective {
	return &revisionEffective{
		Class:                          r.Class,
		Metric:                         r.Metric,
		Target:                         r.Target,
		Total:                          r.Total,
		PanicThreshold:                 r.PanicThreshold,
		TargetBurstCapacity:            r.TargetBurstCapacity,
		StableWindowSeconds:            r.StableWindow.Seconds(),
		PanicWindowSeconds:             r.PanicWindow.Seconds(),
		ScaleDownDelaySeconds:          r.ScaleDownDelay.Seconds(),
		ScaleToZeroPodRetentionSeconds: r.ScaleToZeroPodRetentionPeriod.Seconds(),
		InitialScale:                   r.InitialScale,
		ActivationScale:                r.ActivationScale,
		MinScale:                       r.MinScale,
		MaxScale:                       r.MaxScale,
		MaxScaleUpRate:                 r.MaxScaleUpRate,
		MaxScaleDownRate:               r.MaxScaleDownRate,
		Aggregation:                    r.Aggregation,
	}
}
