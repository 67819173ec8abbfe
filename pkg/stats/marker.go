package stats

import (
	"crypto/subtle"
	"errors"
	"fmt"
)

// ProxySecretEnv is the environment variable of the per-install secret
// that proves a ProxyHeaderName marker came from an activator. The
// activator and the queue-proxy both read it; the local platform sets it
// for both, and on Kubernetes it comes from the Secret ProxySecretName.
const ProxySecretEnv = "ACTIVATOR_PROXY_SECRET"

// ProxySecretName and ProxySecretKey locate the secret on Kubernetes: a
// Secret of that name in the activator's namespace (and a copy in each
// namespace of revisions), holding it under that key.
const (
	ProxySecretName = "ebb-proxy-secret"
	ProxySecretKey  = "secret"
)

// Bounds of a proxy secret: long enough not to be guessed, short enough
// for a header value; visible ASCII only (it travels in a header value).
const (
	MinProxySecretLen = 16
	MaxProxySecretLen = 256
)

// ErrBadProxySecret is returned for a secret outside the rules.
var ErrBadProxySecret = errors.New("a proxy secret must be 16 to 256 visible ASCII characters (no spaces)")

// ProxyMarker is the activator's proxied-request marker, bound to a secret:
// the activator sends ProxyHeaderName: Value(); a queue-proxy counts a
// request as proxied (Arrival) only when the header carries that exact
// value. Without a secret the marker proves nothing, so Arrival always
// says Direct: a client that forges the header cannot have its load
// subtracted. The zero ProxyMarker has no secret. Immutable.
type ProxyMarker struct {
	value []byte // "activator SECRET", or "activator" without a secret
	armed bool   // a secret is set: Arrival can say ViaActivator
}

// NewProxyMarker builds the marker of secret; "" gives a marker that is
// sent as plain "activator" and never honoured.
func NewProxyMarker(secret string) (ProxyMarker, error) {
	if secret == "" {
		return ProxyMarker{value: []byte(ProxyHeaderValue)}, nil
	}
	if err := ValidateProxySecret(secret); err != nil {
		return ProxyMarker{}, err
	}
	return ProxyMarker{value: []byte(ProxyHeaderValue + " " + secret), armed: true}, nil
}

// ValidateProxySecret reports whether secret follows the rules (an empty
// secret is "none" and valid).
func ValidateProxySecret(secret string) error {
	if secret == "" {
		return nil
	}
	if len(secret) < MinProxySecretLen || len(secret) > MaxProxySecretLen {
		return fmt.Errorf("%w: it has %d", ErrBadProxySecret, len(secret))
	}
	for i := 0; i < len(secret); i++ {
		if c := secret[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("%w: byte %d is %#x", ErrBadProxySecret, i, c)
		}
	}
	return nil
}

// Armed reports whether the marker has a secret (and so can be honoured).
func (m ProxyMarker) Armed() bool { return m.armed }

// Value is the ProxyHeaderName value the activator sends. The caller must
// not modify it.
func (m ProxyMarker) Value() []byte {
	if m.value == nil {
		return []byte(ProxyHeaderValue)
	}
	return m.value
}

// Arrival classifies a request by its ProxyHeaderName value (empty when
// absent): ViaActivator only when the marker is armed and v is its value,
// compared in constant time. It does not allocate.
func (m ProxyMarker) Arrival(v []byte) Arrival {
	if !m.armed || len(v) == 0 {
		return Direct
	}
	if subtle.ConstantTimeCompare(v, m.value) == 1 {
		return ViaActivator
	}
	return Direct
}
