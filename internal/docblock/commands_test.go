package docblock

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository, from this package's directory.
const root = "../.."

// TestDocCommandsExist: every shell command the README and docs/*.md
// show (their sh code blocks; in a block with "$ " prompts, the prompted
// lines) names what exists here: make targets of the Makefile, binaries
// that make build puts in bin/ (from cmd/ or deploy/local/), go tool X
// for a tool in go.mod, hack/ scripts and go run paths; and no bare hey
// (it is a tool of the module, not on the PATH: go tool hey).
func TestDocCommandsExist(t *testing.T) {
	targets := makeTargets(t)
	tools := goTools(t)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join(root, "README.md"))
	checked := 0
	for _, doc := range docs {
		for _, c := range shellCommands(t, doc) {
			checked++
			for _, problem := range checkCommand(c.text, targets, tools) {
				t.Errorf("%s:%d: %q: %s", filepath.Base(doc), c.line, c.text, problem)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d commands found in the docs: the extraction is broken", checked)
	}
}

// TestCheckCommand: the checker finds what it should (so the test above
// can fail).
func TestCheckCommand(t *testing.T) {
	targets := map[string]bool{"build": true, "run": true}
	tools := map[string]bool{"hey": true}
	for _, tc := range []struct {
		cmd  string
		want int
	}{
		{"make build", 0},
		{"make nosuch", 1},
		{"make run EXAMPLE=0 KUBECTL=kubectl", 0},
		{"bin/autoscaler status --context testbed", 0},
		{"bin/nosuch status", 1},
		{"go tool hey -z 30s http://x/", 0},
		{"go tool wrk", 1},
		{"hey -z 15s -c 50 http://x/", 1},
		{"hack/testbed.sh run -- sh -c 'hey -z 15s http://x/'", 1},
		{"hack/testbed.sh run -- sh -c 'go tool hey -z 15s http://x/'", 0},
		{"hack/nosuch.sh up", 1},
		{"go run ./deploy/local/grpcload -c 20", 0},
		{"go run ./nosuch", 1},
	} {
		if got := checkCommand(tc.cmd, targets, tools); len(got) != tc.want {
			t.Errorf("%q: problems %q, want %d", tc.cmd, got, tc.want)
		}
	}
}

type command struct {
	text string
	line int
}

// shellCommands are the commands of the sh code blocks of a Markdown file.
func shellCommands(t *testing.T, path string) []command {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out, block []command
	in, prompted := false, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case !in && (trimmed == "```sh" || trimmed == "```bash" || trimmed == "```console"):
			in, prompted, block = true, false, nil
		case in && trimmed == "```":
			in = false
			for _, c := range block {
				if p, ok := strings.CutPrefix(c.text, "$ "); ok {
					out = append(out, command{p, c.line})
				} else if !prompted {
					out = append(out, c)
				}
			}
		case in:
			prompted = prompted || strings.HasPrefix(trimmed, "$ ")
			if trimmed != "" && !strings.HasPrefix(trimmed, "#") && !strings.HasPrefix(trimmed, "...") {
				block = append(block, command{trimmed, n})
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	makeCall = regexp.MustCompile(`(?:^|[;&|(]\s*|-- )make((?:\s+[A-Za-z0-9_.=/-]+)+)`)
	binCall  = regexp.MustCompile(`(?:^|\s|=)bin/([a-z0-9-]+)(?:\s|$)`)
	toolCall = regexp.MustCompile(`go tool ([a-z0-9-]+)`)
	hackPath = regexp.MustCompile(`(?:^|\s|\./)(hack/[A-Za-z0-9_./-]+)`)
	goRun    = regexp.MustCompile(`go run (\./[A-Za-z0-9_./-]+)`)
	bareHey  = regexp.MustCompile(`(?:^|[;&|'"(]\s*)hey\s`)
)

// checkCommand lists what a command names that does not exist.
func checkCommand(cmd string, targets, tools map[string]bool) []string {
	var problems []string
	cmd = strings.SplitN(cmd, " # ", 2)[0] // a trailing comment
	for _, m := range makeCall.FindAllStringSubmatch(cmd, -1) {
		for _, word := range strings.Fields(m[1]) {
			if !strings.Contains(word, "=") && !strings.HasPrefix(word, "-") && !targets[word] {
				problems = append(problems, "make has no target "+word)
			}
		}
	}
	for _, m := range binCall.FindAllStringSubmatch(cmd, -1) {
		if !exists("cmd/"+m[1]) && !exists("deploy/local/"+m[1]) {
			problems = append(problems, "make build puts no bin/"+m[1]+" (no cmd/"+m[1]+" nor deploy/local/"+m[1]+")")
		}
	}
	for _, m := range toolCall.FindAllStringSubmatch(cmd, -1) {
		if !tools[m[1]] {
			problems = append(problems, "go.mod has no tool "+m[1])
		}
	}
	for _, m := range hackPath.FindAllStringSubmatch(cmd, -1) {
		if !exists(strings.TrimRight(m[1], ".")) {
			problems = append(problems, m[1]+" does not exist")
		}
	}
	for _, m := range goRun.FindAllStringSubmatch(cmd, -1) {
		if !exists(m[1]) {
			problems = append(problems, m[1]+" does not exist")
		}
	}
	if bareHey.MatchString(cmd) {
		problems = append(problems, "hey is not on the PATH: it is a tool of the module, go tool hey")
	}
	return problems
}

func exists(rel string) bool {
	_, err := os.Stat(filepath.Join(root, rel))
	return err == nil
}

// makeTargets are the Makefile's targets.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Za-z0-9_.-]+):`).FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = true
	}
	return out
}

// goTools are the last path elements of go.mod's tool directives.
func goTools(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*tool\s+(\S+)`).FindAllStringSubmatch(string(b), -1) {
		out[filepath.Base(m[1])] = true
	}
	return out
}
