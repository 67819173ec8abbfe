package main

import (
	"fmt"
	"go/scanner"
	"go/token"
	"path"
	"regexp"
	"slices"
	"strings"
)

// repo is the repository as the check sees it: its tracked files.
type repo struct {
	files map[string]bool
	dirs  map[string]bool
	paths []string // every tracked file and directory, for the suffix rule
	read  func(string) ([]byte, error)
}

func newRepo(files []string, read func(string) ([]byte, error)) *repo {
	r := &repo{files: map[string]bool{}, dirs: map[string]bool{}, read: read}
	for _, f := range files {
		r.files[f] = true
		r.paths = append(r.paths, f)
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			if !r.dirs[d] {
				r.dirs[d] = true
				r.paths = append(r.paths, d)
			}
		}
	}
	slices.Sort(r.paths)
	return r
}

// finding is one citation outside the repository.
type finding struct {
	file string
	line int
	text string // the path or phrase as written
	why  string
}

func (f finding) String() string { return fmt.Sprintf("%s:%d: %q %s", f.file, f.line, f.text, f.why) }

// unit is a piece of text the check reads as one (a comment block, a
// Markdown paragraph), with the line it starts on.
type unit struct {
	text string
	line int
}

// check reads every file's text and reports what it cites outside the
// repository, in file order.
func check(r *repo) []finding {
	var out []finding
	for _, f := range r.paths {
		if !r.files[f] || strings.HasPrefix(f, "hack/checkcitations/") {
			continue // this command's own text spells what it catches
		}
		units := textOf(f, r.read)
		for _, u := range units {
			out = append(out, r.checkUnit(f, u)...)
		}
	}
	return out
}

// textOf is what of file f the check reads: Go comments, # comments of
// scripts, Makefiles and YAML, and Markdown whole (by paragraph).
func textOf(f string, read func(string) ([]byte, error)) []unit {
	kind := path.Ext(f)
	base := path.Base(f)
	if kind != ".go" && kind != ".md" && kind != ".sh" && kind != ".yaml" && kind != ".yml" && base != "Makefile" {
		return nil
	}
	src, err := read(f)
	if err != nil {
		return []unit{{text: "(unreadable: " + err.Error() + ")", line: 1}}
	}
	switch kind {
	case ".go":
		return goComments(src)
	case ".md":
		return paragraphs(string(src))
	}
	return hashComments(string(src))
}

func goComments(src []byte) []unit {
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, scanner.ScanComments)
	var out []unit
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok == token.COMMENT {
			out = append(out, unit{text: lit, line: fset.Position(pos).Line})
		}
	}
}

func paragraphs(src string) []unit {
	var out []unit
	start, lines := 1, []string(nil)
	for i, l := range strings.Split(src, "\n") {
		if strings.TrimSpace(l) == "" {
			if lines != nil {
				out = append(out, unit{text: strings.Join(lines, "\n"), line: start})
			}
			lines = nil
			continue
		}
		if lines == nil {
			start = i + 1
		}
		lines = append(lines, l)
	}
	if lines != nil {
		out = append(out, unit{text: strings.Join(lines, "\n"), line: start})
	}
	return out
}

// hashComments are the # comments of a script, a Makefile or YAML: from a
// # at a line's start or after white space to the line's end, each line a
// unit of its own joined with the comment lines right after it.
func hashComments(src string) []unit {
	var out []unit
	prev := -2
	for i, l := range strings.Split(src, "\n") {
		at := strings.Index(l, "#")
		for at > 0 && l[at-1] != ' ' && l[at-1] != '\t' {
			next := strings.Index(l[at+1:], "#")
			if next < 0 {
				at = -1
				break
			}
			at += next + 1
		}
		if at < 0 {
			continue
		}
		if prev == i-1 && len(out) > 0 {
			out[len(out)-1].text += "\n" + l[at:]
		} else {
			out = append(out, unit{text: l[at:], line: i + 1})
		}
		prev = i
	}
	return out
}

var (
	urlRE     = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s)>\]"'` + "`" + `]+`)
	wordRE    = regexp.MustCompile(`[A-Za-z0-9_@.+~/\-]+`)
	extRE     = regexp.MustCompile(`\.(md|go|ya?ml|json|jsonl|sh|txt|proto|html|csv|svg|toml|mod|sum|golden|py)$`)
	sectionRE = regexp.MustCompile(`^\s*§\s*([0-9][0-9.]*[0-9]|[0-9])`)
	// phraseRE: the phrases that speak of the work (its sessions and
	// stops, the workspace's folders and style guide), any white space
	// between their words (a phrase may wrap).
	phraseRE = regexp.MustCompile(`(?i:\b(this\s+session|the\s+last\s+stop|last\s+session|the\s+shared\s+(spec|reference)s?)\b)|\bSTY[L]E\b`)
	capsRE   = regexp.MustCompile(`^[A-Z][A-Z0-9]*$`)
	// hostRoots are the first directories of absolute paths that belong to
	// a machine, never to the repository.
	hostRoots = []string{"work", "home", "root", "Users", "mnt", "srv"}
	// placeholders stand for a name in examples (DIR/NAME.json).
	placeholders = []string{"FILE", "DIR", "NAME", "NAMESPACE", "NS", "SEQ", "PATH", "OUT", "ID", "N", "T", "X", "REV", "KEY"}
	// workspace are first directories that name the workspace's folders
	// beside the repository: a path under them is never another project's.
	workspace = []string{"shared", "spec", "reference"}
	// upstreams name the projects whose files the text may cite as theirs.
	upstreams = []string{"Knative", "knative", "Kubernetes", "kubernetes", "Istio", "KEDA", "Go's", "the Go ", "fasthttp", "etcd", "raft",
		"client-go", "gRPC", "grpc", "metrics-server", "kwok", "Prometheus", "zap's", "golang-lru", "groupcache", "Envoy", "hey's", "wrk"}
)

// checkUnit reports the citations outside the repository in one unit of
// file f.
func (r *repo) checkUnit(f string, u unit) []finding {
	text := urlRE.ReplaceAllStringFunc(u.text, func(s string) string { return strings.Repeat(" ", len(s)) })
	var out []finding
	report := func(at int, what, why string) {
		out = append(out, finding{file: f, line: u.line + strings.Count(text[:at], "\n"), text: what, why: why})
	}
	for _, m := range phraseRE.FindAllStringIndex(text, -1) {
		report(m[0], text[m[0]:m[1]], "speaks of the work, not of the project: say what the project does")
	}
	for _, m := range wordRE.FindAllStringIndex(text, -1) {
		word := strings.TrimRight(text[m[0]:m[1]], ".-/")
		if why := r.outside(f, word, text, m[1]); why != "" {
			report(m[0], word, why)
		}
	}
	return out
}

// outside says why word, found in text at end, cites something outside
// the repository ("" when it does not).
func (r *repo) outside(f, word, text string, end int) string {
	switch {
	case strings.HasPrefix(word, "/"):
		first, _, _ := strings.Cut(word[1:], "/")
		if slices.Contains(hostRoots, first) {
			return "is a path on a machine, outside the repository"
		}
		return ""
	case strings.HasPrefix(word, "../") || strings.HasPrefix(word, "./"):
		// A script's or a Makefile's paths are the repository root's (where
		// make and CI run them); any other file's, its directory's.
		dir := path.Dir(f)
		if path.Ext(f) == ".sh" || path.Base(f) == "Makefile" {
			dir = "."
		}
		p := path.Join(dir, word)
		if p == ".." || strings.HasPrefix(p, "../") {
			return "leaves the repository"
		}
		if extRE.MatchString(word) && !r.files[p] && !r.dirs[p] {
			return "is not a file of the repository"
		}
		return ""
	case !extRE.MatchString(word) || placeholder(word) || strings.HasPrefix(word, "~"):
		return ""
	}
	first, _, hasDir := strings.Cut(word, "/")
	md := strings.HasSuffix(word, ".md")
	switch {
	case hasDir && strings.Contains(first, ".") && !strings.HasPrefix(first, "."):
		return "" // a module path: github.com/x/y/z.go, k8s.io/...
	case !hasDir && (strings.HasPrefix(word, ".") || !md):
		return "" // an extension (.yaml), or an example's name (out.json)
	}
	resolved, ok := r.resolve(f, word, hasDir)
	switch {
	case !ok && !hasDir:
		return "is not a Markdown file of the repository"
	case !ok && slices.Contains(workspace, first):
		return "is not a file of the repository"
	case !ok && !attributed(text):
		return "is not a file of the repository, and the text does not say whose it is"
	case ok && md:
		if m := sectionRE.FindStringSubmatch(text[end:]); m != nil && !r.hasSection(resolved, m[1]) {
			return fmt.Sprintf("§%s: %s has no such section", m[1], resolved)
		}
	}
	return ""
}

// resolve finds word among the tracked paths: from the root, from f's
// directory, as the end of a tracked path, or (a bare name) as a tracked
// file's name.
func (r *repo) resolve(f, word string, hasDir bool) (string, bool) {
	for _, p := range []string{path.Clean(word), path.Join(path.Dir(f), word)} {
		if r.files[p] || r.dirs[p] {
			return p, true
		}
	}
	for _, p := range r.paths {
		if strings.HasSuffix(p, "/"+word) || !hasDir && path.Base(p) == word {
			return p, true
		}
	}
	return "", false
}

// hasSection reports whether Markdown file p has a heading numbered n.
func (r *repo) hasSection(p, n string) bool {
	src, err := r.read(p)
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(src), "\n") {
		h := strings.TrimLeft(l, "#")
		if len(h) < len(l) && (strings.HasPrefix(strings.TrimSpace(h), n) || strings.HasPrefix(strings.TrimSpace(h), "§"+n)) {
			return true
		}
	}
	return false
}

func placeholder(word string) bool {
	for _, seg := range strings.FieldsFunc(word, func(c rune) bool { return c == '/' || c == '.' || c == '_' || c == '-' }) {
		if capsRE.MatchString(seg) && slices.Contains(placeholders, seg) {
			return true
		}
	}
	return false
}

func attributed(text string) bool {
	for _, u := range upstreams {
		if strings.Contains(text, u) {
			return true
		}
	}
	return false
}
