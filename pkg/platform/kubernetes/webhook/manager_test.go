package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"testing"
	"time"

	"go.uber.org/zap"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

const (
	testNS, testSecret, testConfig = "ebb-system", "ebb-webhook-certs", "ebb-sidecar-injector"
)

func webhookConfig() *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: testConfig},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{{Name: "a.ebb.dev"}, {Name: "b.ebb.dev"}},
	}
}

func newTestManager(t *testing.T) (*CertManager, *fake.Clientset, *clocktesting.FakeClock) {
	t.Helper()
	client := fake.NewClientset(webhookConfig())
	clk := clocktesting.NewFakeClock(t0)
	o := testCertOptions()
	o.Hosts = []string{"127.0.0.1"}
	m, err := NewCertManager(CertManagerOptions{Client: client, Log: zap.NewNop(), Clock: clk, Namespace: testNS,
		SecretName: testSecret, WebhookConfig: testConfig, Certs: o})
	if err != nil {
		t.Fatal(err)
	}
	return m, client, clk
}

// bundles are the caBundles of the configuration's webhooks.
func bundles(t *testing.T, client *fake.Clientset) [][]byte {
	t.Helper()
	cfg, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), testConfig, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, w := range cfg.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out
}

// servedSerial does a TLS handshake with the server, trusting bundle, and
// returns the serial of the certificate it served.
func servedSerial(t *testing.T, addr string, bundle []byte, now time.Time) string {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(bundle)
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12,
		Time: func() time.Time { return now }})
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// TestCertManager: the first round creates the Secret, publishes the
// bundle in every webhook and serves a certificate the bundle trusts; at
// two thirds of the serving certificate's life a round replaces it and the
// server presents the new one at the next handshake, without a restart.
func TestCertManager(t *testing.T) {
	m, client, clk := newTestManager(t)
	ctx := context.Background()
	if m.Ready() {
		t.Fatal("ready before any round")
	}
	srv, err := Listen("127.0.0.1:0", http.NotFoundHandler(), m.GetCertificate)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	defer func() {
		_ = srv.Shutdown(ctx)
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()

	if err := m.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	sec, err := client.CoreV1().Secrets(testNS).Get(ctx, testSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no Secret: %v", err)
	}
	for i, b := range bundles(t, client) {
		if !bytes.Equal(b, sec.Data[keyCABundle]) {
			t.Errorf("webhook %d caBundle is not the Secret's bundle", i)
		}
	}
	first := servedSerial(t, srv.Addr().String(), sec.Data[keyCABundle], clk.Now())

	clk.Step(testCertOptions().CertLifetime / 3) // not due: nothing changes
	if err := m.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := servedSerial(t, srv.Addr().String(), sec.Data[keyCABundle], clk.Now()); got != first {
		t.Fatalf("certificate replaced before it was due")
	}
	clk.Step(testCertOptions().CertLifetime / 3)
	if err := m.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := servedSerial(t, srv.Addr().String(), sec.Data[keyCABundle], clk.Now()); got == first {
		t.Fatal("the served certificate was not replaced at two thirds of its life")
	}
}

// TestCertManagerSecondReplica: a replica that finds the Secret made by
// another serves the same certificate and writes nothing.
func TestCertManagerSecondReplica(t *testing.T) {
	a, client, clk := newTestManager(t)
	ctx := context.Background()
	if err := a.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := NewCertManager(CertManagerOptions{Client: client, Log: zap.NewNop(), Clock: clk, Namespace: testNS,
		SecretName: testSecret, WebhookConfig: testConfig, Certs: a.o.Certs})
	if err != nil {
		t.Fatal(err)
	}
	before := len(client.Actions())
	if err := b.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	for _, act := range client.Actions()[before:] {
		if act.GetVerb() != "get" {
			t.Errorf("second replica did %s %s; want reads only", act.GetVerb(), act.GetResource().Resource)
		}
	}
	ca, _ := a.GetCertificate(nil)
	cb, _ := b.GetCertificate(nil)
	if !bytes.Equal(ca.Certificate[0], cb.Certificate[0]) {
		t.Error("the replicas serve different certificates")
	}
}

// TestCertManagerRun: Run reconciles at once, again at each tick of the
// clock, and returns when its context ends.
func TestCertManagerRun(t *testing.T) {
	m, client, clk := newTestManager(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !m.Ready() || !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("Run made no certificate within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Someone deletes the Secret: the next tick writes a new one.
	if err := client.CoreV1().Secrets(testNS).Delete(ctx, testSecret, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Minute)
	for {
		_, err := client.CoreV1().Secrets(testNS).Get(ctx, testSecret, metav1.GetOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Secret was not recreated at the tick: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of its context's end")
	}
}

// TestNewCertManagerRequires: missing options are an error, not a panic
// later.
func TestNewCertManagerRequires(t *testing.T) {
	if _, err := NewCertManager(CertManagerOptions{}); err == nil {
		t.Error("NewCertManager accepted empty options")
	}
}

// TestCertManagerStandby: a replica that may not write (not the leader)
// writes nothing: without a Secret it serves nothing, then it serves the
// leader's certificate, and a due rotation waits for the leader, after
// which the standby serves the new certificate.
func TestCertManagerStandby(t *testing.T) {
	leader, client, clk := newTestManager(t)
	standby, err := NewCertManager(CertManagerOptions{Client: client, Log: zap.NewNop(), Clock: clk, Namespace: testNS,
		SecretName: testSecret, WebhookConfig: testConfig, Certs: leader.o.Certs, MayWrite: func() bool { return false }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	writes := func() int {
		n := 0
		for _, act := range client.Actions() {
			if act.GetVerb() != "get" {
				n++
			}
		}
		return n
	}
	if err := standby.Reconcile(ctx); err != nil || standby.Ready() || writes() != 0 {
		t.Fatalf("standby without a Secret: error %v, ready %v, %d writes; want nothing", err, standby.Ready(), writes())
	}
	if err := leader.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if err := standby.Reconcile(ctx); err != nil || !standby.Ready() {
		t.Fatalf("standby after the leader wrote: error %v, ready %v", err, standby.Ready())
	}
	served := func(m *CertManager) []byte {
		c, err := m.GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.Certificate[0]
	}
	first := served(standby)
	clk.Step(testCertOptions().CertLifetime * 2 / 3)
	before := writes()
	if err := standby.Reconcile(ctx); err != nil || writes() != before || !bytes.Equal(served(standby), first) {
		t.Fatalf("standby with a rotation due: error %v, %d writes; want the old certificate kept and nothing written", err, writes()-before)
	}
	if err := leader.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if err := standby.Reconcile(ctx); err != nil || bytes.Equal(served(standby), first) || !bytes.Equal(served(standby), served(leader)) {
		t.Fatalf("standby after the leader rotated: error %v; want the leader's new certificate", err)
	}
}
