package stats

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
)

// ProxySecretEnv is the environment variable of the secret that proves a
// ProxyHeaderName marker came from an activator. The activator reads the
// install's secret from it; a queue-proxy reads its namespace's secret,
// NamespaceProxySecret of the install's (the local platform sets both; on
// Kubernetes the activators read the Secret ProxySecretName, and the
// webhook writes the namespace's into each sidecar it injects).
const ProxySecretEnv = "ACTIVATOR_PROXY_SECRET"

// ProxySecretName and ProxySecretKey locate the install's secret on
// Kubernetes: a Secret of that name in Ebb's namespace, holding it under
// that key (the autoscaler makes it when it is missing). A revision of the
// long form (no webhook) reads its namespace's secret from a Secret of the
// same name and key in its own namespace.
const (
	ProxySecretName = "ebb-proxy-secret"
	ProxySecretKey  = "secret"
)

// Bounds of a proxy secret: long enough not to be guessed, short enough
// for a header value; visible ASCII only (it travels in a header value).
const (
	minProxySecretLen = 16
	maxProxySecretLen = 256
)

// errBadProxySecret is returned for a secret outside the rules.
var errBadProxySecret = errors.New("a proxy secret must be 16 to 256 visible ASCII characters (no spaces)")

// NamespaceProxySecret is the proxy secret of the queue-proxies of
// namespace: HMAC-SHA256 of the namespace keyed by the install's secret,
// in hex (64 characters, a valid proxy secret). The activator sends
// "activator " + it to a revision of that namespace. Whoever can read one
// namespace's secret (its pods' env) can mark requests to that
// namespace's revisions only: without the install's secret, another
// namespace's is out of reach. An empty install secret gives "" (no
// secret).
func NamespaceProxySecret(install, namespace string) string {
	if install == "" {
		return ""
	}
	mac := hmac.New(sha256.New, []byte(install))
	mac.Write([]byte(namespaceSecretContext))
	mac.Write([]byte(namespace))
	return hex.EncodeToString(mac.Sum(nil))
}

// namespaceSecretContext separates this use of the install's secret from
// any other (a version, should the derivation ever change).
const namespaceSecretContext = "ebb proxy marker v1\x00"

// ProxyMarker is the activator's proxied-request marker, bound to a secret:
// the activator sends ProxyHeaderName: Value(); a queue-proxy counts a
// request as proxied (Arrival) only when the header carries that exact
// value. Without a secret the marker proves nothing, so Arrival always
// says Direct: a client that forges the header cannot have its load
// subtracted. The zero ProxyMarker has no secret. Immutable.
type ProxyMarker struct {
	value   []byte // "activator SECRET", or "activator" without a secret
	notSent []byte // the NotSentHeaderName value of this secret (nil without one)
	armed   bool   // a secret is set: Arrival can say ViaActivator
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
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(notSentContext))
	notSent := []byte(hex.EncodeToString(mac.Sum(nil)))
	return ProxyMarker{value: []byte(ProxyHeaderValue + " " + secret), notSent: notSent, armed: true}, nil
}

// NotSentHeaderName is the field by which a queue-proxy tells the
// activator that a request it forwarded never reached the app (the app
// refused the connection, or none could be made; nothing of the request
// was written to it): the activator may then send it to another replica,
// or hold it as for a revision at zero, whatever its method, when it
// still has its whole body. Its value proves the answer came from a
// queue-proxy holding the namespace's secret (ProxyMarker.NotSent); the
// queue-proxy sets it only on an answer to a request that carried the
// activator's armed marker, and the activator removes the field from
// every answer before it reaches a client, so a client or an app can
// neither forge it nor learn its value.
const NotSentHeaderName = "Ebb-Not-Sent"

// notSentContext separates the not-sent proof from the marker itself.
const notSentContext = "ebb not sent v1\x00"

// NotSent is the NotSentHeaderName value of the marker's secret:
// HMAC-SHA256 of a fixed context keyed by the secret, in hex; nil when
// the marker has no secret (a queue-proxy without one never vouches, an
// activator without one trusts nothing). The caller must not modify it.
func (m ProxyMarker) NotSent() []byte { return m.notSent }

// isNotSent reports whether v, a NotSentHeaderName value, is this
// marker's proof, compared in constant time. Always false without a
// secret. It does not allocate.
func (m ProxyMarker) isNotSent(v []byte) bool {
	return m.armed && len(v) > 0 && subtle.ConstantTimeCompare(v, m.notSent) == 1
}

// ValidateProxySecret reports whether secret follows the rules (an empty
// secret is "none" and valid).
func ValidateProxySecret(secret string) error {
	if secret == "" {
		return nil
	}
	if len(secret) < minProxySecretLen || len(secret) > maxProxySecretLen {
		return fmt.Errorf("%w: it has %d", errBadProxySecret, len(secret))
	}
	for i := 0; i < len(secret); i++ {
		if c := secret[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("%w: byte %d is %#x", errBadProxySecret, i, c)
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
