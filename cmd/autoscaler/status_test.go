package main

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/autoscaler/fleetapi"
	"ebb.dev/ebb/pkg/podfailure"
	"ebb.dev/ebb/pkg/scaling/decider"
)

func TestStatusAndExplain(t *testing.T) {
	st := autoscaler.Status{Namespace: "default", Name: "hello", Class: "kpa.autoscaling.knative.dev", Metric: "concurrency", Target: 7,
		DecisionView: autoscaler.DecisionView{Time: time.Now(), Desired: 5, Recommended: 5, Ready: 2, Panic: true, EBC: -12, ActivatorInPath: true, State: "active"}}
	dec := st.DecisionView
	dec.Reasons = []autoscaler.ReasonView{{Code: "PanicEntered", Message: "panic mode: the panic window needs 5 pods"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/revisions":
			json.NewEncoder(w).Encode([]autoscaler.Status{st})
		case "/revisions/default/hello/decisions":
			json.NewEncoder(w).Encode(autoscaler.DecisionsResponse{Status: st, Decisions: []autoscaler.DecisionView{dec}})
		default:
			http.Error(w, "revision default/nope is not autoscaled here", http.StatusNotFound)
		}
	}))
	defer srv.Close()

	var out, errOut bytes.Buffer
	if code := run([]string{"status", "--server", srv.URL}, nil, &out, &errOut); code != 0 {
		t.Fatalf("status exited %d: %s", code, errOut.String())
	}
	for _, want := range []string{"REVISION", "default/hello", "active", "in path"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run([]string{"explain", "--server", srv.URL, "default/hello"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("explain exited %d: %s", code, errOut.String())
	}
	for _, want := range []string{"default/hello", "desired 5", "PanicEntered", "panic mode"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("explain output lacks %q:\n%s", want, out.String())
		}
	}
	errOut.Reset()
	if code := run([]string{"explain", "--server", srv.URL, "default/nope"}, nil, &out, &errOut); code != 1 || !strings.Contains(errOut.String(),
		"not autoscaled") {
		t.Errorf("explain of an unknown revision: exit %d, stderr %s", code, errOut.String())
	}
	if code := run([]string{"explain", "--server", srv.URL, "nope"}, nil, &out, &errOut); code != 2 {
		t.Errorf("explain of a malformed key: exit %d, want 2", code)
	}
	if code := run([]string{"status", "--server", "http://127.0.0.1:1"}, nil, &out, &errOut); code != 1 || !strings.Contains(errOut.String(),
		"is `autoscaler run` running") {
		t.Errorf("status without a server: exit %d, stderr %s", code, errOut.String())
	}
}

// TestStatusShowsStartFailure: a revision whose pods cannot start says
// so in status (its reason, by its state), explain (the whole message),
// and -o json (the startFailure object).
func TestStatusShowsStartFailure(t *testing.T) {
	f := &podfailure.Failure{Reason: "ImagePullFailed", Cause: "ErrImagePull", Pod: "hello-abc", Container: "app",
		Message: `the image "ebb.dev/nosuch:1" of container app cannot be pulled: not found; fix the image name or tag`}
	st := autoscaler.Status{Namespace: "default", Name: "hello", Class: "kpa.autoscaling.knative.dev", Metric: "concurrency", Target: 100,
		StartFailure: f, DecisionView: autoscaler.DecisionView{Time: time.Now(), Desired: 1, Recommended: 1, State: "activating"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/revisions":
			json.NewEncoder(w).Encode([]autoscaler.Status{st})
		default:
			json.NewEncoder(w).Encode(autoscaler.DecisionsResponse{Status: st})
		}
	}))
	defer srv.Close()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"status"}, []string{"activating (pods failing: ImagePullFailed)"}},
		{[]string{"explain", "default/hello"}, []string{"pods cannot start: ImagePullFailed (ErrImagePull) in pod hello-abc, container app: " + f.Message}},
		{[]string{"status", "-o", "json"}, []string{`"startFailure":`, `"reason": "ImagePullFailed"`, `"container": "app"`}},
	} {
		var out, errOut bytes.Buffer
		if code := run(append(tc.args, "--server", srv.URL), nil, &out, &errOut); code != 0 {
			t.Fatalf("%v exited %d: %s", tc.args, code, errOut.String())
		}
		for _, want := range tc.want {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%v output lacks %q:\n%s", tc.args, want, out.String())
			}
		}
	}
}

// TestExplainPrintsNoNegativeZero: averages of -0, or a tiny negative that
// rounds to zero, print as 0.000.
func TestExplainPrintsNoNegativeZero(t *testing.T) {
	dec := autoscaler.DecisionView{Time: time.Unix(0, 0), Stable: math.Copysign(0, -1), PanicAverage: -1e-9}
	var out bytes.Buffer
	printExplain(&out, autoscaler.DecisionsResponse{Decisions: []autoscaler.DecisionView{dec}})
	if !strings.Contains(out.String(), "stable 0.000, panic avg 0.000") || strings.Contains(out.String(), "-0") {
		t.Errorf("explain output:\n%s\nwant stable 0.000, panic avg 0.000 and no -0", out.String())
	}
	if got := fixed(-0.25, 2); got != "-0.25" {
		t.Errorf("fixed(-0.25, 2) = %q, want -0.25", got)
	}
}

func TestConditionsText(t *testing.T) {
	all := decider.HPAConditions(nil)
	if got := conditionsText(all); got != "ok" {
		t.Errorf("usual conditions: %q, want ok", got)
	}
	limited := decider.HPAConditions([]decider.Reason{decider.RestoredReason(decider.TooManyReplicas, "", [3]float64{12, 10})})
	if got := conditionsText(limited); got != "ScalingLimited=TooManyReplicas" {
		t.Errorf("limited: %q", got)
	}
	if got := conditionsText(nil); got != "-" {
		t.Errorf("KPA: %q, want -", got)
	}
}

// TestStatusSaysWhatIsMissing: a list gathered without some autoscaler
// replica (Ebb-Partial) is printed, and stderr names what is missing.
func TestStatusSaysWhatIsMissing(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(fleetapi.PartialHeader, "10.0.0.3:9091: connection refused")
		json.NewEncoder(w).Encode([]autoscaler.Status{{Namespace: "default", Name: "hello"}})
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	if code := run([]string{"status", "--server", srv.URL}, nil, &out, &errOut); code != 0 || !strings.Contains(out.String(), "default/hello") {
		t.Fatalf("status exited %d: %s %s", code, out.String(), errOut.String())
	}
	if !strings.Contains(errOut.String(), "did not answer are missing: 10.0.0.3:9091") {
		t.Errorf("stderr %q: want it to name the replica whose revisions are missing", errOut.String())
	}
}

// TestStatusThroughKubeconfig: with a kubeconfig (as kubectl finds it:
// $KUBECONFIG, --context), status and explain ask the autoscaler through
// the API server's proxy to its Service, with the context's credentials,
// and print JSON or YAML with -o; a bad -o is named.
func TestStatusThroughKubeconfig(t *testing.T) {
	st := autoscaler.Status{Namespace: "default", Name: "hello", Class: "kpa.autoscaling.knative.dev", Metric: "concurrency", Target: 7,
		DecisionView: autoscaler.DecisionView{Time: time.Now(), Desired: 5, Ready: 2, State: "active"}}
	const prefix = "/api/v1/namespaces/ebb-system/services/ebb-autoscaler:http/proxy"
	// TLS: client-go sends a kubeconfig's credentials only over TLS.
	apiserver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer token-b" {
			http.Error(w, "Unauthorized: "+r.Header.Get("Authorization"), http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case prefix + "/revisions":
			json.NewEncoder(w).Encode([]autoscaler.Status{st})
		case prefix + "/revisions/default/hello/decisions":
			json.NewEncoder(w).Encode(autoscaler.DecisionsResponse{Status: st})
		default:
			http.NotFound(w, r)
		}
	}))
	defer apiserver.Close()
	dir := t.TempDir()
	kubeconfig := func(name, ctx, server, token string) string {
		p := filepath.Join(dir, name)
		data := "apiVersion: v1\nkind: Config\ncurrent-context: " + ctx + "\nclusters:\n- name: c-" + ctx +
			"\n  cluster:\n    insecure-skip-tls-verify: true\n    server: " + server +
			"\ncontexts:\n- name: " + ctx + "\n  context:\n    cluster: c-" + ctx + "\n    user: u-" + ctx + "\nusers:\n- name: u-" + ctx +
			"\n  user:\n    token: " + token + "\n"
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := kubeconfig("a", "ctx-a", "https://127.0.0.1:1", "token-a") // the current context of the first file: unreachable
	b := kubeconfig("b", "ctx-b", apiserver.URL, "token-b")
	t.Setenv("KUBECONFIG", a+string(os.PathListSeparator)+b)

	var out, errOut bytes.Buffer
	if code := run([]string{"status", "--context", "ctx-b", "-o", "json"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("status --context ctx-b exited %d: %s", code, errOut.String())
	}
	var got []autoscaler.Status
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got) != 1 || got[0].Name != "hello" || got[0].Desired != 5 {
		t.Errorf("status -o json = %s (%v), want hello with desired 5", out.String(), err)
	}
	out.Reset()
	if code := run([]string{"explain", "--context", "ctx-b", "-o", "yaml", "default/hello"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("explain exited %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "name: hello") || !strings.Contains(out.String(), "desired: 5") {
		t.Errorf("explain -o yaml:\n%s", out.String())
	}
	errOut.Reset()
	if code := run([]string{"status", "-o", "json"}, nil, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "through the API server") {
		t.Errorf("status in the unreachable current context: exit %d, stderr %s", code, errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"status", "--context", "ctx-b", "-o", "xml"}, nil, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), `-o "xml"`) {
		t.Errorf("-o xml: exit %d, stderr %s", code, errOut.String())
	}
}
