//go:build k8s

package k8s

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/platform/kubernetes/statsauth"
	"ebb.dev/ebb/pkg/stats"
)

// saToken is a token of a ServiceAccount from the TokenRequest API, for
// the audience (none: the API server's).
func saToken(t *testing.T, ns, sa, audience string) string {
	t.Helper()
	req := &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(600))}}
	if audience != "" {
		req.Spec.Audiences = []string{audience}
	}
	tok, err := env.client.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s/%s: %v", ns, sa, err)
	}
	return tok.Status.Token
}

// postStats posts one activator stat to an autoscaler's stats port (or,
// with admin, to its admin port) and returns the status and body.
func postStats(t *testing.T, admin bool, token, contentType string) (int, string) {
	t.Helper()
	batch, err := stats.AppendBatch(nil, []stats.Stat{{Source: stats.SourceActivator, PodName: "forged",
		Revision: "default/not-a-revision", AverageConcurrency: 100, RequestCount: 100}})
	if err != nil {
		t.Fatal(err)
	}
	addr := env.stats.addr()
	if admin {
		addr = env.proxy.addr()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/stats", bytes.NewReader(batch))
	req.Header.Set("Content-Type", contentType)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /v1/stats: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// TestStatsOnlyFromActivators: the autoscalers' stats endpoint checks tokens
// with a TokenReview: another ServiceAccount's token is refused (403),
// the activator's token for the API server (another audience) and no
// token are refused (401), the activator's token for ebb-autoscaler is
// taken; the admin port does not take stats at all.
func TestStatsOnlyFromActivators(t *testing.T) {
	ns := newNamespace(t, "stats-auth")
	ctx := context.Background()
	if _, err := env.client.CoreV1().ServiceAccounts(ns).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "intruder"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	activator := saToken(t, ebbNS, activatorName, statsauth.DefaultStatsAudience)
	tests := []struct {
		name, token, contentType string
		admin                    bool
		code                     int
		body                     string
	}{
		{name: "no token", code: 401, body: "no credentials"},
		{name: "another ServiceAccount", token: saToken(t, ns, "intruder", statsauth.DefaultStatsAudience), code: 403,
			body: "system:serviceaccount:" + ns + ":intruder is not the activator's ServiceAccount"},
		{name: "the activator's API token", token: saToken(t, ebbNS, activatorName, ""), code: 401, body: "invalid credentials"},
		{name: "made-up token", token: "eyJhbGciOiJSUzI1NiJ9.e30.forged", code: 401, body: "invalid credentials"},
		{name: "text/plain", token: activator, contentType: "text/plain", code: 415, body: "Content-Type"},
		{name: "on the admin port", token: activator, admin: true, code: 404, body: "stats port"},
		{name: "the activator", token: activator, code: 200, body: `"accepted": 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct := tt.contentType
			if ct == "" {
				ct = stats.BatchContentType
			}
			code, body := postStats(t, tt.admin, tt.token, ct)
			if code != tt.code || !strings.Contains(body, tt.body) {
				t.Errorf("status %d %q, want %d containing %q", code, body, tt.code, tt.body)
			}
			if tt.token != "" && strings.Contains(body, tt.token) {
				t.Errorf("the answer contains the token")
			}
		})
	}
	pods, _ := autoscalerPods(ctx)
	for _, p := range pods {
		if log := logTail(ebbNS+"_"+p+"_autoscaler", 5000); strings.Contains(log, activator) {
			t.Errorf("%s's log contains the activator's token", p)
		}
	}
}

// TestNetworkPolicyAndDisruptionBudgetsApply: deploy/'s NetworkPolicy and
// PodDisruptionBudgets are accepted by the API server and select Ebb's
// pods: each budget sees both replicas and allows one disruption.
func TestNetworkPolicyAndDisruptionBudgetsApply(t *testing.T) {
	ctx := context.Background()
	np, err := env.client.NetworkingV1().NetworkPolicies(ebbNS).Get(ctx, autoscalerName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("NetworkPolicy %s/%s: %v", ebbNS, autoscalerName, err)
	}
	var statsFrom []string
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			if p.Port != nil && p.Port.IntVal == 9093 {
				for _, f := range rule.From {
					if f.PodSelector != nil {
						statsFrom = append(statsFrom, f.PodSelector.MatchLabels["app"])
					}
				}
			}
		}
	}
	if !slices.Equal(statsFrom, []string{activatorName}) {
		t.Errorf("stats port 9093 open to %v, want [%s] only", statsFrom, activatorName)
	}
	for _, name := range []string{activatorName, autoscalerName} {
		waitFor(t, 60*time.Second, "PodDisruptionBudget "+name+" counting its pods", func() (bool, string) {
			pdb, err := env.client.PolicyV1().PodDisruptionBudgets(ebbNS).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			st := pdb.Status
			return st.ExpectedPods == 2 && st.CurrentHealthy == 2 && st.DisruptionsAllowed == 1,
				fmt.Sprintf("expected %d, healthy %d, disruptions allowed %d", st.ExpectedPods, st.CurrentHealthy, st.DisruptionsAllowed)
		})
	}
}
