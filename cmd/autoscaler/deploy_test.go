package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/manifest"

	"ebb.dev/ebb/internal/golden"
)

// updating: the tests run with -update (internal/golden's flag).
func updating() bool { return golden.Updating() }

const deployConfigMap = "../../deploy/config-autoscaler.yaml"

// renderConfigMap renders deploy/config-autoscaler.yaml from the key table,
// so the documented keys, rules and defaults are the code's.
func renderConfigMap() string {
	var b strings.Builder
	b.WriteString(`# config-autoscaler: Ebb's cluster-wide autoscaler settings. The keys,
# defaults and rules are Knative's config-autoscaler, plus Ebb's
# tick-interval; revisions override some of them with annotations.
#
# Check a change before applying it:
#   autoscaler validate -f deploy/config-autoscaler.yaml -f your-app.yaml
#
# Generated from the key table of pkg/config; to change it, edit the table
# and run: go test ./cmd/autoscaler -run TestDeployConfigMap -update
apiVersion: v1
kind: ConfigMap
metadata:
  name: config-autoscaler
  namespace: ebb-system
data:
  _example: |
    ################################
    #                              #
    #    EXAMPLE CONFIGURATION     #
    #                              #
    ################################

    # This block is not read: it documents every key with its default
    # value. To change a setting, copy its line under data: (above this
    # _example block), keeping the value quoted, and edit it.
`)
	for _, k := range config.Keys() {
		b.WriteString("\n")
		for _, line := range wrap(k.Doc, 68) {
			b.WriteString("    # " + line + "\n")
		}
		for _, line := range wrap("Valid: "+k.Rule+".", 68) {
			b.WriteString("    # " + line + "\n")
		}
		if k.Override != "" {
			b.WriteString("    # Per-revision annotation: " + k.Override + "\n")
		}
		b.WriteString("    " + k.Name + ": " + strconv.Quote(k.Default) + "\n")
	}
	return b.String()
}

// wrap breaks text into lines of at most width bytes (longer words stay whole).
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}

func TestDeployConfigMapIsGenerated(t *testing.T) {
	want := renderConfigMap()
	if updating() {
		if err := os.WriteFile(deployConfigMap, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(deployConfigMap)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("%s is out of date with the key table; run go test ./cmd/autoscaler -run TestDeployConfigMap -update (-want +got):\n%s", deployConfigMap, diff)
	}
}

// exampleData reads the key: value lines of the _example block.
func exampleData(t *testing.T, example string) map[string]string {
	t.Helper()
	data := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(example))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, raw, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("_example line %q is not key: value", line)
		}
		value, err := strconv.Unquote(raw)
		if err != nil {
			t.Fatalf("_example value of %s is not quoted: %q", key, raw)
		}
		if _, dup := data[key]; dup {
			t.Errorf("_example sets %s twice", key)
		}
		data[key] = value
	}
	return data
}

func TestDeployConfigMapExampleIsDefaults(t *testing.T) {
	raw, err := os.ReadFile(deployConfigMap)
	if err != nil {
		t.Fatal(err)
	}
	set, err := manifest.Decode(deployConfigMap, raw)
	if err != nil {
		t.Fatal(err)
	}
	cms := set.ConfigMapsNamed(config.ConfigMapName)
	if len(cms) != 1 || cms[0].Object.Namespace != config.SystemNamespace {
		t.Fatalf("want one ConfigMap ebb-system/%s in %s, got %d", config.ConfigMapName, deployConfigMap, len(cms))
	}
	data := exampleData(t, cms[0].Object.Data["_example"])
	for _, k := range config.Keys() {
		if _, ok := data[k.Name]; !ok {
			t.Errorf("_example does not document %s", k.Name)
		}
	}
	got, err := config.NewAutoscalerFromMap(data)
	if err != nil {
		t.Fatalf("_example does not parse: %v", err)
	}
	if diff := cmp.Diff(config.Defaults(), got); diff != "" {
		t.Errorf("_example is not the defaults (-want +got):\n%s", diff)
	}
	// The ConfigMap as shipped (only _example) must be the defaults too.
	shipped, err := config.NewAutoscalerFromMap(cms[0].Object.Data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(config.Defaults(), shipped); diff != "" {
		t.Errorf("the shipped ConfigMap is not the defaults (-want +got):\n%s", diff)
	}
}
