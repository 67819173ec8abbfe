package stats

import (
	"errors"
	"strings"
	"testing"
)

func TestProxyMarkerArrival(t *testing.T) {
	const secret = "0123456789abcdef-secret"
	armed, err := NewProxyMarker(secret)
	if err != nil {
		t.Fatal(err)
	}
	unarmed, err := NewProxyMarker("")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		marker ProxyMarker
		header string
		want   Arrival
	}{
		{"absent", armed, "", Direct},
		{"forged plain marker", armed, "activator", Direct},
		{"wrong secret", armed, "activator 0123456789abcdef-secreT", Direct},
		{"secret prefix", armed, "activator 0123456789abcdef", Direct},
		{"secret and more", armed, "activator " + secret + "x", Direct},
		{"the activator's own", armed, string(armed.Value()), ViaActivator},
		{"no secret: plain marker not honoured", unarmed, "activator", Direct},
		{"no secret: nothing honoured", unarmed, string(unarmed.Value()), Direct},
		{"zero marker", ProxyMarker{}, "activator", Direct},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.marker.Arrival([]byte(tt.header)); got != tt.want {
				t.Errorf("Arrival(%q) = %v, want %v", tt.header, got, tt.want)
			}
		})
	}
	if got, want := string(armed.Value()), "activator "+secret; got != want {
		t.Errorf("Value() = %q, want %q", got, want)
	}
	if got := string((ProxyMarker{}).Value()); got != ProxyHeaderValue {
		t.Errorf("zero Value() = %q, want %q", got, ProxyHeaderValue)
	}
}

func TestValidateProxySecret(t *testing.T) {
	tests := []struct {
		name   string
		secret string
		ok     bool
	}{
		{"none", "", true},
		{"short", "abc", false},
		{"minimum", strings.Repeat("a", minProxySecretLen), true},
		{"maximum", strings.Repeat("a", maxProxySecretLen), true},
		{"too long", strings.Repeat("a", maxProxySecretLen+1), false},
		{"space", "0123456789 abcdef", false},
		{"newline", "0123456789abcdef\n", false},
		{"non-ASCII", "0123456789abcdefé", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateProxySecret(tt.secret)
			if (err == nil) != tt.ok {
				t.Fatalf("ValidateProxySecret(%q) = %v, want ok %v", tt.secret, err, tt.ok)
			}
			if err != nil && !errors.Is(err, errBadProxySecret) {
				t.Errorf("error %v is not ErrBadProxySecret", err)
			}
			if _, merr := NewProxyMarker(tt.secret); (merr == nil) != tt.ok {
				t.Errorf("NewProxyMarker(%q) = %v, want ok %v", tt.secret, merr, tt.ok)
			}
		})
	}
}

func FuzzProxyMarkerArrival(f *testing.F) {
	m, err := NewProxyMarker("0123456789abcdef")
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("activator 0123456789abcdef"))
	f.Add([]byte("activator"))
	f.Fuzz(func(t *testing.T, v []byte) {
		if m.Arrival(v) == ViaActivator && string(v) != string(m.Value()) {
			t.Fatalf("Arrival(%q) = ViaActivator, want only for the exact marker", v)
		}
	})
}

// TestNamespaceProxySecret: each namespace gets its own valid secret from
// the install's, the same every time; knowing one namespace's does not
// give another's (they differ, and neither is the install's); no install
// secret gives none.
func TestNamespaceProxySecret(t *testing.T) {
	const install = "install-secret-0123456789abcdef"
	a, b := NamespaceProxySecret(install, "team-a"), NamespaceProxySecret(install, "team-b")
	if a == b || a == install || b == install {
		t.Fatalf("team-a %q, team-b %q, install %q: want three different secrets", a, b, install)
	}
	if again := NamespaceProxySecret(install, "team-a"); again != a {
		t.Fatalf("team-a's secret changed: %q then %q", a, again)
	}
	if other := NamespaceProxySecret(install+"x", "team-a"); other == a {
		t.Fatalf("two installs give team-a the same secret %q", a)
	}
	for _, s := range []string{a, b} {
		if err := ValidateProxySecret(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	// Known answer: the derivation is a contract between the activator
	// and the webhook, and what `openssl dgst -sha256 -hmac` gives (docs/kubernetes.md).
	if want := "2a7be640142cf547588df786c702551549e8579598694d602746ea35d6acc566"; a != want {
		t.Errorf("team-a's secret %q, want %q", a, want)
	}
	if got := NamespaceProxySecret("", "team-a"); got != "" {
		t.Errorf("no install secret gave %q, want none", got)
	}
	m, err := NewProxyMarker(a)
	if err != nil {
		t.Fatal(err)
	}
	if m.Arrival([]byte("activator "+b)) != Direct || m.Arrival([]byte("activator "+install)) != Direct {
		t.Error("team-a's queue-proxy honours team-b's or the install's marker")
	}
	if m.Arrival([]byte("activator "+a)) != ViaActivator {
		t.Error("team-a's queue-proxy refuses its own namespace's marker")
	}
}

// TestNotSentProof: only the queue-proxy holding the secret can say a
// request never reached the app; without a secret nothing is trusted.
func TestNotSentProof(t *testing.T) {
	armed, err := NewProxyMarker("0123456789abcdef-secret")
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewProxyMarker("0123456789abcdef-other")
	if err != nil {
		t.Fatal(err)
	}
	unarmed, _ := NewProxyMarker("")
	tests := []struct {
		name   string
		marker ProxyMarker
		value  string
		want   bool
	}{
		{"its own proof", armed, string(armed.NotSent()), true},
		{"absent", armed, "", false},
		{"forged word", armed, "true", false},
		{"the request marker", armed, string(armed.Value()), false},
		{"another secret's proof", armed, string(other.NotSent()), false},
		{"a prefix", armed, string(armed.NotSent()[:10]), false},
		{"no secret trusts nothing", unarmed, string(armed.NotSent()), false},
		{"no secret, empty", unarmed, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.marker.isNotSent([]byte(tt.value)); got != tt.want {
				t.Errorf("IsNotSent(%q) = %v, want %v", tt.value, got, tt.want)
			}
		})
	}
	if unarmed.NotSent() != nil {
		t.Errorf("an unarmed marker has a proof %q", unarmed.NotSent())
	}
	if strings.Contains(string(armed.NotSent()), "0123456789abcdef-secret") {
		t.Errorf("the proof %q carries the secret", armed.NotSent())
	}
}
