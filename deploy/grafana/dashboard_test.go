// Package grafana holds Ebb's Grafana dashboard (ebb-dashboard.json); this
// test keeps it importable and true to the metrics the code exports.
package grafana

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

type dashboard struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Datasource json.RawMessage `json:"datasource"`
	Panels     []panel         `json:"panels"`
	Targets    []struct {
		Expr       string          `json:"expr"`
		Datasource json.RawMessage `json:"datasource"`
	} `json:"targets"`
}

func load(t *testing.T) *dashboard {
	t.Helper()
	data, err := os.ReadFile("ebb-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("ebb-dashboard.json does not parse: %v", err)
	}
	return &d
}

// flatten lists the panels, those nested in rows included.
func flatten(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, flatten(p.Panels)...)
	}
	return out
}

// TestDashboardShape: a title and uid, the datasource as a variable that
// every query uses, and the namespace and revision variables.
func TestDashboardShape(t *testing.T) {
	d := load(t)
	if d.Title == "" || d.UID == "" {
		t.Errorf("title %q, uid %q: both are needed for import", d.Title, d.UID)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	for name, typ := range map[string]string{"datasource": "datasource", "namespace": "query", "revision": "query"} {
		if vars[name] != typ {
			t.Errorf("variable %q is of type %q, want %q", name, vars[name], typ)
		}
	}
	ids := map[int]string{}
	for _, p := range flatten(d.Panels) {
		if other, ok := ids[p.ID]; ok {
			t.Errorf("panels %q and %q share id %d", other, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		if !strings.Contains(string(p.Datasource), `"${datasource}"`) {
			t.Errorf("panel %q: datasource %s, want the ${datasource} variable", p.Title, p.Datasource)
		}
		for _, tg := range p.Targets {
			if !strings.Contains(string(tg.Datasource), `"${datasource}"`) {
				t.Errorf("panel %q: a query's datasource is %s, want the ${datasource} variable", p.Title, tg.Datasource)
			}
		}
	}
}

var (
	metricName = regexp.MustCompile(`\bebb_[a-z0-9_]+\b`)
	// selector matches a metric with its label matchers.
	selector = regexp.MustCompile(`\b(ebb_[a-z0-9_]+)\{([^}]*)\}`)
	matcher  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)`)
)

// labelsPrometheusAdds are labels the scrape or the histogram adds.
var labelsPrometheusAdds = map[string]bool{"le": true, "instance": true, "job": true, "pod": true}

// TestDashboardMetricsExist: every metric a query names is one the code
// registers (its full name, or a prefix and a name joined as
// client_golang's Namespace and Name are), and every label a query
// matches is a label that package declares.
func TestDashboardMetricsExist(t *testing.T) {
	d := load(t)
	code := literalsByPackage(t, filepath.Join("..", "..", "pkg"), filepath.Join("..", "..", "cmd"))
	var exprs []string
	for _, p := range flatten(d.Panels) {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(map[string]any); ok {
			if s, ok := q["query"].(string); ok {
				exprs = append(exprs, s)
			}
		}
	}
	seen := map[string]bool{}
	for _, expr := range exprs {
		for _, name := range metricName.FindAllString(expr, -1) {
			if seen[name] {
				continue
			}
			seen[name] = true
			if pkgs := definedIn(code, name); len(pkgs) == 0 {
				t.Errorf("metric %s (in %q) is not registered anywhere under pkg/ or cmd/", name, expr)
			}
		}
		for _, m := range selector.FindAllStringSubmatch(expr, -1) {
			pkgs := definedIn(code, m[1])
			if len(pkgs) == 0 {
				continue // reported above
			}
			for _, l := range matcher.FindAllStringSubmatch(m[2], -1) {
				if !labelsPrometheusAdds[l[1]] && !anyHas(code, pkgs, l[1]) {
					t.Errorf("metric %s: label %q (in %q) is not declared by %v", m[1], l[1], expr, pkgs)
				}
			}
		}
	}
	if len(seen) < 20 {
		t.Errorf("the dashboard queries %d metrics; expected the autoscaler's, the queue-proxy's and the activator's", len(seen))
	}
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("%d metrics: %s", len(names), strings.Join(names, " "))
}

// definedIn returns the packages whose string literals make the metric:
// the whole name, or two literals joined directly or with "_". Histogram
// series (_bucket, _sum, _count) count as their histogram.
func definedIn(code map[string]map[string]bool, name string) []string {
	candidates := []string{name}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			candidates = append(candidates, base)
		}
	}
	var pkgs []string
	for pkg, lits := range code {
		for _, n := range candidates {
			if lits[n] || joined(lits, n) {
				pkgs = append(pkgs, pkg)
				break
			}
		}
	}
	sort.Strings(pkgs)
	return pkgs
}

func joined(lits map[string]bool, name string) bool {
	for i := 1; i < len(name); i++ {
		if lits[name[:i]] && (lits[name[i:]] || name[i] == '_' && lits[name[i+1:]]) {
			return true
		}
	}
	return false
}

func anyHas(code map[string]map[string]bool, pkgs []string, lit string) bool {
	for _, p := range pkgs {
		if code[p][lit] {
			return true
		}
	}
	return false
}

// literalsByPackage returns the string literals of the non-test Go files
// under the roots, by directory.
func literalsByPackage(t *testing.T, roots ...string) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	fset := token.NewFileSet()
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			dir := filepath.Dir(path)
			if out[dir] == nil {
				out[dir] = map[string]bool{}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil {
						out[dir][s] = true
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}
