package manifest

import (
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"ebb.dev/ebb/pkg/config"
)

// timeoutVars are the queue-proxy's variables of a revision's timeouts, in
// the order of Timeouts' fields.
var timeoutVars = [3]string{config.EnvRevisionTimeout, config.EnvResponseStartTimeout, config.EnvIdleTimeout}

// fields are t's three values, in the order of timeoutVars.
func (t *Timeouts) fields() [3]**int64 { return [3]**int64{&t.Request, &t.ResponseStart, &t.Idle} }

// Env is t as the queue-proxy's environment: one literal variable per
// timeout that is set, in the order of the fields.
func (t Timeouts) Env() []corev1.EnvVar {
	var env []corev1.EnvVar
	for i, v := range t.fields() {
		if *v != nil {
			env = append(env, corev1.EnvVar{Name: timeoutVars[i], Value: strconv.FormatInt(**v, 10)})
		}
	}
	return env
}

// Timeouts are the revision's timeouts as its queue-proxy applies them: a
// Knative revision's fields (checked by the Knative reader), else the
// literal REVISION_TIMEOUT_SECONDS, REVISION_RESPONSE_START_TIMEOUT_SECONDS
// and REVISION_IDLE_TIMEOUT_SECONDS of the pod template's containers, the
// first that sets each: the app container's in the short form (the
// injection copies them to the sidecar), the queue-proxy's in a long form,
// as the Kubernetes platform reads the request timeout. A value that is not
// whole seconds within the queue-proxy's range is an error naming the
// container and the variable.
func (d Deployment) Timeouts() (Timeouts, error) {
	if d.Knative != nil {
		return d.Knative.Timeouts, nil
	}
	var t Timeouts
	var errs []error
	for i, v := range t.fields() {
		for ci, c := range d.Object.Spec.Template.Spec.Containers {
			raw, ok := literal(c.Env, timeoutVars[i])
			if !ok {
				continue
			}
			low := int64(0)
			if i == 0 {
				low = 1
			}
			n, err := strconv.ParseInt(raw, 10, 64)
			if err != nil || n < low || n > maxTimeoutSeconds {
				errs = append(errs, fmt.Errorf("spec.template.spec.containers[%d].env: %s=%q: Ebb reads whole seconds within [%d, %d] "+
					"(Knative's fields are whole seconds); write a whole number in that range", ci, timeoutVars[i], raw, low, maxTimeoutSeconds))
			} else {
				*v = &n
			}
			break
		}
	}
	return t, errors.Join(errs...)
}

// literal is the value of a variable set as a literal (not valueFrom).
func literal(env []corev1.EnvVar, name string) (string, bool) {
	for _, e := range env {
		if e.Name == name && e.ValueFrom == nil {
			return e.Value, true
		}
	}
	return "", false
}
