package proxysecret

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"ebb.dev/ebb/pkg/stats"
)

// TestMakesTheSecretOnce: a missing Secret is made with a valid random
// secret; a second keeper (another replica) takes the same one; a
// replaced value is taken at the next read; an invalid one is refused and
// the last good one stays.
func TestMakesTheSecretOnce(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	k := New(Options{Client: client, Namespace: "ebb-system", Name: stats.ProxySecretName})
	if _, err := k.Secret(); !errors.Is(err, errNotLoaded) {
		t.Fatalf("before a read: %v, want ErrNotLoaded", err)
	}
	if err := k.sync(ctx); err != nil {
		t.Fatal(err)
	}
	first, err := k.Secret()
	if err != nil || len(first) != 64 || stats.ValidateProxySecret(first) != nil {
		t.Fatalf("made %q, %v: want 64 hex digits", first, err)
	}
	s, err := client.CoreV1().Secrets("ebb-system").Get(ctx, stats.ProxySecretName, metav1.GetOptions{})
	if err != nil || string(s.Data[stats.ProxySecretKey]) != first {
		t.Fatalf("stored %v, %v", s, err)
	}
	other := New(Options{Client: client, Namespace: "ebb-system", Name: stats.ProxySecretName})
	if err := other.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := other.Secret(); got != first {
		t.Fatalf("the second replica has %q, want the first's %q", got, first)
	}

	s.Data[stats.ProxySecretKey] = []byte("rotated-by-an-operator-0123")
	if _, err := client.CoreV1().Secrets("ebb-system").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := k.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := k.Secret(); got != "rotated-by-an-operator-0123" {
		t.Fatalf("after the rotation: %q", got)
	}
	s.Data[stats.ProxySecretKey] = []byte("short")
	if _, err := client.CoreV1().Secrets("ebb-system").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := k.sync(ctx); err == nil {
		t.Fatal("an invalid secret was taken")
	}
	if got, _ := k.Secret(); got != "rotated-by-an-operator-0123" {
		t.Fatalf("after an invalid value: %q, want the last good one", got)
	}
}

// TestRaceAndRefusal: a replica that loses the create race reads the
// winner's Secret; one the API refuses reports why, naming the cause.
func TestRaceAndRefusal(t *testing.T) {
	ctx := context.Background()
	winner := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: stats.ProxySecretName, Namespace: "ebb-system"},
		Data: map[string][]byte{stats.ProxySecretKey: []byte("the-winners-secret-0123456")}}
	client := fake.NewClientset()
	gets := 0
	client.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		gets++
		if gets == 1 {
			return true, nil, apierrors.NewNotFound(corev1.Resource("secrets"), stats.ProxySecretName)
		}
		return true, winner, nil
	})
	client.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewAlreadyExists(corev1.Resource("secrets"), stats.ProxySecretName)
	})
	k := New(Options{Client: client, Namespace: "ebb-system", Name: stats.ProxySecretName})
	if err := k.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := k.Secret(); got != "the-winners-secret-0123456" {
		t.Fatalf("got %q, want the winner's", got)
	}

	denied := fake.NewClientset()
	denied.PrependReactor("*", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("secrets"), stats.ProxySecretName, errors.New("RBAC"))
	})
	k = New(Options{Client: denied, Namespace: "ebb-system", Name: stats.ProxySecretName})
	if err := k.sync(ctx); !apierrors.IsForbidden(err) {
		t.Fatalf("got %v, want Forbidden", err)
	}
	if _, err := k.Secret(); !errors.Is(err, errNotLoaded) || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("Secret() = %v: want ErrNotLoaded with the cause", err)
	}
}
