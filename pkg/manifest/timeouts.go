package manifest

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"ebb.dev/ebb/pkg/config"
)

// Timeouts are a revision's timeouts as its queue-proxy applies them
// (Knative's timeoutSeconds, responseStartTimeoutSeconds and
// idleTimeoutSeconds, the queue-proxy's REVISION_*_TIMEOUT_SECONDS); nil:
// not given (the queue-proxy's defaults: 300s, the request timeout, none).
type Timeouts struct {
	Request, ResponseStart, Idle *time.Duration
}

// fields are t's three values, in the order of config.TimeoutEnvs.
func (t *Timeouts) fields() [3]**time.Duration {
	return [3]**time.Duration{&t.Request, &t.ResponseStart, &t.Idle}
}

// Env is t as the queue-proxy's environment: one literal variable per
// timeout that is set, in the order of the fields, in the seconds that
// config.ParseTimeoutSeconds reads back to the same value.
func (t Timeouts) Env() []corev1.EnvVar {
	var env []corev1.EnvVar
	for i, v := range t.fields() {
		if *v != nil {
			env = append(env, corev1.EnvVar{Name: config.TimeoutEnvs[i], Value: config.TimeoutSecondsText(**v)})
		}
	}
	return env
}

// OrderErrors are the rules between the timeouts that are set (the unset
// ones at their defaults): see config.TimeoutOrderErrors.
func (t Timeouts) OrderErrors() []error {
	request, start, idle := config.DefaultRevisionTimeout, time.Duration(0), time.Duration(0)
	for i, v := range [3]*time.Duration{&request, &start, &idle} {
		if p := *t.fields()[i]; p != nil {
			*v = *p
		}
	}
	return config.TimeoutOrderErrors(request, start, idle)
}

// Timeouts are the revision's timeouts as its queue-proxy applies them: a
// Knative revision's fields (checked by the Knative reader), else the
// REVISION_TIMEOUT_SECONDS, REVISION_RESPONSE_START_TIMEOUT_SECONDS and
// REVISION_IDLE_TIMEOUT_SECONDS of the pod template's containers
// (ContainerTimeouts), the first container that sets each: the app
// container's in the short form (the injection copies them to the
// sidecar), the queue-proxy's in a long form, as the Kubernetes platform
// reads the request timeout. Every container's values are checked, each
// error naming the container and the variable.
func (d Deployment) Timeouts() (Timeouts, error) {
	if d.Knative != nil {
		return d.Knative.Timeouts, nil
	}
	var t Timeouts
	var errs []error
	for ci, c := range d.Object.Spec.Template.Spec.Containers {
		ct, err := ContainerTimeouts(c, fmt.Sprintf("spec.template.spec.containers[%d]", ci))
		if err != nil {
			errs = append(errs, err)
		}
		for i, v := range t.fields() {
			if *v == nil {
				*v = *ct.fields()[i]
			}
		}
	}
	if len(errs) == 0 {
		errs = t.OrderErrors()
	}
	return t, errors.Join(errs...)
}

// ContainerTimeouts reads one container's timeout variables (at is its
// path, e.g. spec.containers[0]): each one's effective definition (the
// last, as the kubelet applies them), parsed by the one rule
// (config.ParseTimeoutSeconds). A variable set through valueFrom is an
// error: its value is needed when the pod is created (the grace period,
// the activator's timeout), not only in the container.
func ContainerTimeouts(c corev1.Container, at string) (Timeouts, error) {
	var t Timeouts
	var errs []error
	for i, v := range t.fields() {
		name := config.TimeoutEnvs[i]
		e, ok := EnvVar(c.Env, name)
		switch {
		case !ok:
		case e.ValueFrom != nil:
			errs = append(errs, fmt.Errorf("%s.env: %s is set through valueFrom, but Ebb reads it when the pod is created "+
				"(the grace period, the activator's timeout): write the number of seconds as its value", at, name))
		default:
			if fe := config.TimeoutError(name, e.Value); fe != nil {
				errs = append(errs, fmt.Errorf("%s.env: %w", at, fe))
				continue
			}
			d, _ := config.ParseTimeoutSeconds(name, e.Value)
			*v = &d
		}
	}
	return t, errors.Join(errs...)
}

// EnvVar is the effective definition of the variable name in env: the
// last one, as the kubelet applies a list that defines a name twice.
func EnvVar(env []corev1.EnvVar, name string) (corev1.EnvVar, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if env[i].Name == name {
			return env[i], true
		}
	}
	return corev1.EnvVar{}, false
}
