package webhook

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// Keys of the certificate Secret's data.
const (
	keyCACert     = "ca.crt"
	keyCAKey      = "ca.key"
	keyNextCACert = "next-ca.crt" // a CA published in the bundle, not yet signing
	keyNextCAKey  = "next-ca.key"
	keyCert       = "tls.crt"
	keyKey        = "tls.key"
	keyCABundle   = "ca-bundle.crt" // what the webhook configuration trusts
)

// CertOptions are the lifetimes and names of the webhook's certificates.
type CertOptions struct {
	// Hosts are the serving certificate's names: DNS names
	// (ebb-webhook.ebb-system.svc) or IP addresses.
	Hosts []string
	// CALifetime and CertLifetime are the certificates' validity; each is
	// replaced at RotateAt of its lifetime.
	CALifetime, CertLifetime time.Duration
}

// DefaultCertOptions: a CA of three years and serving certificates of 90
// days, each replaced at two thirds of its life.
func DefaultCertOptions(hosts []string) CertOptions {
	return CertOptions{Hosts: hosts, CALifetime: 3 * 365 * 24 * time.Hour, CertLifetime: 90 * 24 * time.Hour}
}

// rotateAt is the share of a certificate's lifetime after which it is
// replaced, so that a replacement that fails has a third of the lifetime
// to be retried.
const rotateAt = 2.0 / 3

// plan returns the certificate Secret's next data from its current data
// (nil: none yet), what the webhook configuration trusts now (its
// caBundle), and now; changed is false when the current data stays.
//
// A CA is replaced in two steps, so that the API server never meets a
// serving certificate it does not trust: a new CA is first added to the
// bundle (next-ca), and signs the serving certificate only once the
// webhook configuration trusts it (published holds it). The old CA stays
// in the bundle until the next CA rotation.
func plan(cur map[string][]byte, published []byte, now time.Time, o CertOptions) (next map[string][]byte, changed bool, err error) {
	ca, caErr := parsePair(cur[keyCACert], cur[keyCAKey])
	if caErr != nil || !ca.cert.NotAfter.After(now) {
		return fresh(now, o)
	}
	next = cloneData(cur)
	nextCA, nextErr := parsePair(cur[keyNextCACert], cur[keyNextCAKey])
	switch {
	case nextErr == nil && bundleHas(published, nextCA.cert):
		// Step two: the new CA is trusted; it signs from now on.
		old := ca
		ca = nextCA
		setPair(next, keyCACert, keyCAKey, ca)
		delete(next, keyNextCACert)
		delete(next, keyNextCAKey)
		next[keyCABundle] = concat(ca.certPEM, old.certPEM)
		if err := sign(next, ca, now, o); err != nil {
			return nil, false, err
		}
		return next, true, nil
	case nextErr != nil && due(ca.cert, now):
		// Step one: publish a new CA next to the current one.
		n, err := newCA(now, o.CALifetime)
		if err != nil {
			return nil, false, err
		}
		setPair(next, keyNextCACert, keyNextCAKey, n)
		next[keyCABundle] = concat(ca.certPEM, n.certPEM)
		changed = true
	}
	if !bundleHas(next[keyCABundle], ca.cert) {
		next[keyCABundle] = concat(ca.certPEM)
		changed = true
	}
	if servingValid(next, ca, now, o) {
		return next, changed, nil
	}
	if err := sign(next, ca, now, o); err != nil {
		return nil, false, err
	}
	return next, true, nil
}

// fresh is a new CA and serving certificate.
func fresh(now time.Time, o CertOptions) (map[string][]byte, bool, error) {
	ca, err := newCA(now, o.CALifetime)
	if err != nil {
		return nil, false, err
	}
	d := map[string][]byte{keyCABundle: concat(ca.certPEM)}
	setPair(d, keyCACert, keyCAKey, ca)
	if err := sign(d, ca, now, o); err != nil {
		return nil, false, err
	}
	return d, true, nil
}

// servingValid: the serving certificate parses, is signed by ca, names
// the hosts, and is not due.
func servingValid(d map[string][]byte, ca pair, now time.Time, o CertOptions) bool {
	s, err := parsePair(d[keyCert], d[keyKey])
	if err != nil || due(s.cert, now) || s.cert.CheckSignatureFrom(ca.cert) != nil {
		return false
	}
	var names []string
	names = append(names, s.cert.DNSNames...)
	for _, ip := range s.cert.IPAddresses {
		names = append(names, ip.String())
	}
	want := slices.Clone(o.Hosts)
	slices.Sort(names)
	slices.Sort(want)
	return slices.Equal(names, want)
}

// due: the certificate is past rotateAt of its lifetime.
func due(c *x509.Certificate, now time.Time) bool {
	life := c.NotAfter.Sub(c.NotBefore)
	return !now.Before(c.NotBefore.Add(time.Duration(float64(life) * rotateAt)))
}

// pair is a parsed certificate and its key, with the PEM they came from.
type pair struct {
	cert            *x509.Certificate
	key             *ecdsa.PrivateKey
	certPEM, keyPEM []byte
}

func parsePair(certPEM, keyPEM []byte) (pair, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return pair{}, errors.New("no PEM block")
	}
	c, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return pair{}, err
	}
	k, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return pair{}, err
	}
	return pair{cert: c, key: k, certPEM: certPEM, keyPEM: keyPEM}, nil
}

func newCA(now time.Time, life time.Duration) (pair, error) {
	tmpl := &x509.Certificate{
		Subject:   pkix.Name{CommonName: "ebb-webhook-ca", Organization: []string{"ebb"}},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(life),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	return issue(tmpl, nil)
}

// sign writes a new serving certificate for the hosts, signed by ca.
func sign(d map[string][]byte, ca pair, now time.Time, o CertOptions) error {
	if len(o.Hosts) == 0 {
		return errors.New("creating the webhook's serving certificate: no host names (set --webhook-hosts)")
	}
	tmpl := &x509.Certificate{
		Subject:   pkix.Name{CommonName: o.Hosts[0], Organization: []string{"ebb"}},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(o.CertLifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range o.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	p, err := issue(tmpl, &ca)
	if err != nil {
		return err
	}
	setPair(d, keyCert, keyKey, p)
	return nil
}

// issue creates a key and a certificate from tmpl, signed by parent (nil:
// self-signed).
func issue(tmpl *x509.Certificate, parent *pair) (pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return pair{}, fmt.Errorf("creating a webhook key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return pair{}, fmt.Errorf("creating a certificate serial: %w", err)
	}
	tmpl.SerialNumber = serial
	signer, signerCert := key, tmpl
	if parent != nil {
		signer, signerCert = parent.key, parent.cert
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signer)
	if err != nil {
		return pair{}, fmt.Errorf("creating the certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return pair{}, fmt.Errorf("encoding a webhook key: %w", err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return pair{}, err
	}
	return pair{cert: c, key: key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})}, nil
}

func setPair(d map[string][]byte, certKey, keyKey string, p pair) {
	d[certKey], d[keyKey] = p.certPEM, p.keyPEM
}

// bundleHas: the PEM bundle holds the certificate.
func bundleHas(bundle []byte, c *x509.Certificate) bool {
	for rest := bundle; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return false
		}
		if bytes.Equal(b.Bytes, c.Raw) {
			return true
		}
	}
}

func concat(pems ...[]byte) []byte { return bytes.Join(pems, nil) }

func cloneData(d map[string][]byte) map[string][]byte {
	out := make(map[string][]byte, len(d))
	for k, v := range d {
		out[k] = slices.Clone(v)
	}
	return out
}
