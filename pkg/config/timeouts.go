package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"ebb.dev/ebb/pkg/fielderr"
)

// The revision's timeouts are three environment variables of its
// queue-proxy (EnvRevisionTimeout, EnvResponseStartTimeout, EnvIdleTimeout),
// which a Deployment sets on its app container (the webhook copies them to
// the sidecar) and a Knative revision as timeoutSeconds,
// responseStartTimeoutSeconds and idleTimeoutSeconds. Every reader (the
// queue-proxy, the webhook, validate, the local platform, the activator's
// Kubernetes source) parses them with ParseTimeoutSeconds, so a value one
// of them takes is a value all of them take, with the same meaning.

// DefaultRevisionTimeout is Knative's default request timeout
// (revision-timeout-seconds, a revision's timeoutSeconds): the queue-proxy's
// REVISION_TIMEOUT_SECONDS default and the activator's timeout for a
// revision that sets none.
const DefaultRevisionTimeout = 300 * time.Second

// EnvRevisionTimeout is the queue-proxy's variable of the revision's
// request timeout in seconds (Knative's name); the activator's Kubernetes
// source reads it from the sidecar of the revision's pod template.
const EnvRevisionTimeout = "REVISION_TIMEOUT_SECONDS"

// EnvResponseStartTimeout and EnvIdleTimeout are the queue-proxy's
// variables of a revision's responseStartTimeoutSeconds and
// idleTimeoutSeconds (Knative's names); the local platform sets them from a
// Knative revision's fields, and the sidecar injector copies them, with
// EnvRevisionTimeout, from the app container's env.
const (
	EnvResponseStartTimeout = "REVISION_RESPONSE_START_TIMEOUT_SECONDS"
	EnvIdleTimeout          = "REVISION_IDLE_TIMEOUT_SECONDS"
)

// Bounds of a revision timeout in seconds: a millisecond to an hour
// (Knative's max-revision-timeout-seconds is 600 by default; Ebb's
// queue-proxy takes up to an hour).
const (
	minTimeoutSeconds = 0.001
	maxTimeoutSeconds = 3600
)

// TimeoutEnvs are the three variables, in the order request, response
// start, idle.
var TimeoutEnvs = [3]string{EnvRevisionTimeout, EnvResponseStartTimeout, EnvIdleTimeout}

// errNotTimeoutEnv is the error of ParseTimeoutSeconds for a name that is
// not one of TimeoutEnvs (a programming error of the caller).
var errNotTimeoutEnv = errors.New("not a revision timeout variable")

// timeoutZero is what 0 means for each variable; "" when 0 is refused.
func timeoutZero(env string) (string, bool) {
	switch env {
	case EnvRevisionTimeout:
		return "", true
	case EnvResponseStartTimeout:
		return "the request timeout", true
	case EnvIdleTimeout:
		return "none", true
	}
	return "", false
}

// timeoutRule is the rule of env's values, as ParseTimeoutSeconds words it.
func timeoutRule(env string) string {
	zero, _ := timeoutZero(env)
	if zero == "" {
		return fmt.Sprintf("must be a number of seconds within [%v, %v]", minTimeoutSeconds, maxTimeoutSeconds)
	}
	return fmt.Sprintf("must be 0 (%s) or a number of seconds within [%v, %v]", zero, minTimeoutSeconds, maxTimeoutSeconds)
}

// ParseTimeoutSeconds is the one parse rule of a revision timeout variable
// env: a decimal number of seconds (surrounding spaces ignored, as a
// process's environment may carry them) within [MinTimeoutSeconds,
// maxTimeoutSeconds], or 0 where 0 has a meaning (EnvResponseStartTimeout:
// the request timeout; EnvIdleTimeout: none). NaN, infinities and values
// between 0 and a millisecond are refused: none of them is a timeout the
// user could mean, and each would otherwise turn into another value. The
// duration is rounded to the nanosecond, so it writes back as written.
// The error is the rule broken, for a caller that names the variable
// itself (pkg/envconfig); TimeoutError names it.
func ParseTimeoutSeconds(env, raw string) (time.Duration, error) {
	zero, known := timeoutZero(env)
	if !known {
		return 0, fmt.Errorf("%q: %w", env, errNotTimeoutEnv)
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	ok := err == nil && (f >= minTimeoutSeconds && f <= maxTimeoutSeconds || f == 0 && zero != "")
	if !ok {
		return 0, errors.New(timeoutRule(env))
	}
	return time.Duration(math.Round(f * float64(time.Second))), nil
}

// TimeoutError is the error of a value of env that ParseTimeoutSeconds
// refuses, as a fielderr.Error naming the variable, the value, the rule and
// the fix; nil when the value is taken.
func TimeoutError(env, raw string) *fielderr.Error {
	if _, err := ParseTimeoutSeconds(env, raw); err == nil {
		return nil
	}
	dflt := "the request timeout"
	switch env {
	case EnvRevisionTimeout:
		dflt = strconv.Itoa(int(DefaultRevisionTimeout/time.Second)) + "s"
	case EnvIdleTimeout:
		dflt = "none"
	}
	return &fielderr.Error{Source: "environment variable", Key: env, Value: raw, Rule: timeoutRule(env),
		Fix: fmt.Sprintf("write a number of seconds in that range, e.g. %q, or remove the variable (default: %s)", "30", dflt)}
}

// TimeoutOrderErrors are the rules between the three timeouts (each
// already parsed): neither the response start nor the idle timeout may
// exceed the request timeout, as the queue-proxy checks at start.
func TimeoutOrderErrors(request, responseStart, idle time.Duration) []error {
	var errs []error
	for _, t := range []struct {
		env string
		d   time.Duration
	}{{EnvResponseStartTimeout, responseStart}, {EnvIdleTimeout, idle}} {
		if t.d > request {
			errs = append(errs, &fielderr.Error{Source: "environment variable", Key: t.env, Value: TimeoutSecondsText(t.d),
				Rule: fmt.Sprintf("must not exceed %s (%s)", EnvRevisionTimeout, TimeoutSecondsText(request)),
				Fix:  fmt.Sprintf("lower it, or raise %s", EnvRevisionTimeout)})
		}
	}
	return errs
}

// TimeoutSecondsText writes d as a timeout variable's value: decimal
// seconds, the shortest text that ParseTimeoutSeconds reads back as d.
func TimeoutSecondsText(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }
