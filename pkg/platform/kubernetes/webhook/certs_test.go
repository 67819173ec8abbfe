package webhook

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testCertOptions() CertOptions {
	return CertOptions{Hosts: []string{"ebb-webhook.ebb-system.svc", "10.0.0.7"}, CALifetime: 300 * time.Hour, CertLifetime: 30 * time.Hour}
}

func mustPlan(t *testing.T, cur map[string][]byte, published []byte, now time.Time, o CertOptions) (map[string][]byte, bool) {
	t.Helper()
	next, changed, err := plan(cur, published, now, o)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	return next, changed
}

// verify: the serving certificate is trusted by the bundle for every host
// at now, as the API server checks it.
func verify(t *testing.T, d map[string][]byte, bundle []byte, now time.Time, o CertOptions) {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		t.Fatal("bundle holds no certificate")
	}
	b, _ := pem.Decode(d[keyCert])
	if b == nil {
		t.Fatal("no serving certificate")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range o.Hosts {
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: h, CurrentTime: now}); err != nil {
			t.Errorf("serving certificate for %s at %s: %v", h, now, err)
		}
	}
}

// TestCertCreation: from nothing (or garbage, or an expired CA) a CA and a
// serving certificate for the hosts; planning again changes nothing.
func TestCertCreation(t *testing.T) {
	o := testCertOptions()
	for name, cur := range map[string]map[string][]byte{
		"none":    nil,
		"garbage": {keyCACert: []byte("x"), keyCAKey: []byte("y"), keyCert: []byte("z")},
	} {
		t.Run(name, func(t *testing.T) {
			d, changed := mustPlan(t, cur, nil, t0, o)
			if !changed {
				t.Fatal("changed = false, want a new CA")
			}
			verify(t, d, d[keyCABundle], t0, o)
			if _, again := mustPlan(t, d, d[keyCABundle], t0.Add(time.Hour), o); again {
				t.Error("planning again an hour later changed the data")
			}
		})
	}
	t.Run("expired CA", func(t *testing.T) {
		d, _ := mustPlan(t, nil, nil, t0, o)
		later := t0.Add(o.CALifetime + time.Hour)
		n, changed := mustPlan(t, d, d[keyCABundle], later, o)
		if !changed || bytes.Equal(n[keyCACert], d[keyCACert]) {
			t.Fatal("an expired CA was kept")
		}
		verify(t, n, n[keyCABundle], later, o)
	})
}

// TestServingRotation: the serving certificate is replaced at two thirds
// of its life, by the same CA (the bundle stays); and when the hosts
// change.
func TestServingRotation(t *testing.T) {
	o := testCertOptions()
	d, _ := mustPlan(t, nil, nil, t0, o)
	before := t0.Add(o.CertLifetime*2/3 - 2*time.Minute)
	if _, changed := mustPlan(t, d, d[keyCABundle], before, o); changed {
		t.Errorf("rotated at %s, before two thirds of the lifetime", before.Sub(t0))
	}
	at := t0.Add(o.CertLifetime * 2 / 3)
	n, changed := mustPlan(t, d, d[keyCABundle], at, o)
	if !changed || bytes.Equal(n[keyCert], d[keyCert]) {
		t.Fatalf("not rotated at %s", at.Sub(t0))
	}
	if !bytes.Equal(n[keyCABundle], d[keyCABundle]) || !bytes.Equal(n[keyCACert], d[keyCACert]) {
		t.Error("a serving rotation changed the CA or the bundle")
	}
	verify(t, n, d[keyCABundle], at, o)

	o2 := o
	o2.Hosts = append(o2.Hosts, "ebb-webhook.ebb-system.svc.cluster.local")
	h, changed := mustPlan(t, n, n[keyCABundle], at, o2)
	if !changed {
		t.Fatal("a new host did not re-sign the serving certificate")
	}
	verify(t, h, h[keyCABundle], at, o2)
}

// TestCARotation: the CA is replaced in two steps. First the new CA joins
// the bundle while the old one still signs; only once the webhook
// configuration trusts it does it sign the serving certificate. The old
// serving certificate stays trusted all along.
func TestCARotation(t *testing.T) {
	o := testCertOptions()
	d, _ := mustPlan(t, nil, nil, t0, o)
	oldBundle := d[keyCABundle]
	at := t0.Add(o.CALifetime * 2 / 3)
	// The serving certificate rotated on its own meanwhile: start from a
	// current one.
	d, _ = mustPlan(t, d, oldBundle, at.Add(-time.Hour), o)

	step1, changed := mustPlan(t, d, oldBundle, at, o)
	if !changed || step1[keyNextCACert] == nil {
		t.Fatal("step one: no next CA")
	}
	if !bytes.Equal(step1[keyCert], d[keyCert]) || !bytes.Equal(step1[keyCACert], d[keyCACert]) {
		t.Fatal("step one changed the signing CA or the serving certificate")
	}
	verify(t, step1, step1[keyCABundle], at, o) // the new bundle still trusts the old serving certificate

	// The configuration still holds the old bundle: nothing moves.
	if _, changed := mustPlan(t, step1, oldBundle, at.Add(time.Minute), o); changed {
		t.Fatal("the next CA signed before the webhook configuration trusted it")
	}
	// Published: the next CA signs.
	step2, changed := mustPlan(t, step1, step1[keyCABundle], at.Add(time.Minute), o)
	if !changed || step2[keyNextCACert] != nil || !bytes.Equal(step2[keyCACert], step1[keyNextCACert]) {
		t.Fatal("step two did not promote the next CA")
	}
	verify(t, step2, step1[keyCABundle], at.Add(time.Minute), o) // trusted by what is published
	verify(t, d, step2[keyCABundle], at.Add(time.Minute), o)     // replicas still serving the old certificate stay trusted
	if _, changed := mustPlan(t, step2, step2[keyCABundle], at.Add(2*time.Minute), o); changed {
		t.Error("planning after step two changed the data")
	}
}
