package main

import (
	"fmt"
	"go/token"
	"go/types"
	"os"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"golang.org/x/tools/go/packages"
)

// edit replaces the identifier at off in a file.
type edit struct {
	off      int
	old, new string
}

// unexport renames each identifier of ids to its lower-case name in every
// file that names it, where that is safe, and returns how many it renamed
// and why it left the others.
func (s *surface) unexport(ids []ident) (int, []string) {
	edits := map[string][]edit{} // file -> edits
	var skipped []string
	n := 0
	for _, id := range ids {
		k := s.keyOf(id)
		newName := lowerName(id.name)
		if why := s.blocked(k, id, newName); why != "" {
			skipped = append(skipped, id.key+": "+why)
			continue
		}
		seen := map[string]bool{}
		for _, p := range s.uses[k] {
			pos := s.fset.Position(p)
			at := fmt.Sprintf("%s:%d", pos.Filename, pos.Offset)
			if seen[at] {
				continue
			}
			seen[at] = true
			edits[pos.Filename] = append(edits[pos.Filename], edit{off: pos.Offset, old: id.name, new: newName})
		}
		edits[id.pos.Filename] = append(edits[id.pos.Filename], edit{off: -1, old: id.name, new: newName})
		n++
	}
	for file, es := range edits {
		if err := apply(file, es); err != nil {
			fmt.Fprintln(os.Stderr, "check-surface:", err)
			os.Exit(2)
		}
	}
	return n, skipped
}

// blocked says why id cannot become newName, or "".
func (s *surface) blocked(k string, id ident, newName string) string {
	if s.testUse[k] {
		return "a test of another package uses it"
	}
	if newName == id.name || token.Lookup(newName).IsKeyword() || types.Universe.Lookup(newName) != nil {
		return "its lower-case name " + newName + " is a keyword or predeclared"
	}
	obj := s.objs[k]
	for _, p := range s.variantsOf(obj.Pkg().Path()) {
		if fn, ok := obj.(*types.Func); ok && fn.Type().(*types.Signature).Recv() != nil {
			recv := fn.Type().(*types.Signature).Recv().Type()
			if o, _, _ := types.LookupFieldOrMethod(recv, true, p.Types, newName); o != nil {
				return "its type has a field or method " + newName
			}
			continue
		}
		if p.Types.Scope().Lookup(newName) != nil {
			return "the package has a " + newName
		}
		for _, f := range p.Syntax {
			for _, imp := range f.Imports {
				if pn := p.TypesInfo.PkgNameOf(imp); pn != nil && pn.Name() == newName {
					return "a file of the package imports a package named " + newName
				}
			}
		}
		for _, use := range s.uses[k] {
			if why := shadowed(p, use, newName); why != "" {
				return why
			}
		}
	}
	return ""
}

// variantsOf are the type-checked variants of the package at path that
// hold its own files (itself, and itself compiled with its tests).
func (s *surface) variantsOf(path string) []*packages.Package {
	var out []*packages.Package
	packages.Visit(s.pkgs, nil, func(p *packages.Package) {
		if p.PkgPath == path && p.Types != nil {
			out = append(out, p)
		}
	})
	return out
}

// shadowed says why newName at use (if the use is in p's files) would
// denote something else: a local, a parameter or an import of that name.
func shadowed(p *packages.Package, use token.Pos, newName string) string {
	for _, f := range p.Syntax {
		if use < f.FileStart || use > f.FileEnd {
			continue
		}
		inner := p.Types.Scope().Innermost(use)
		if inner == nil {
			return ""
		}
		if sc, obj := inner.LookupParent(newName, use); obj != nil && sc != p.Types.Scope() {
			pos := p.Fset.Position(use)
			return fmt.Sprintf("%s would be shadowed at %s:%d", newName, pos.Filename, pos.Line)
		}
	}
	return ""
}

// apply makes the edits on file: each identifier renamed at its offset,
// and a doc comment that starts with the old name starts with the new one.
func apply(file string, es []edit) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	sort.Slice(es, func(i, j int) bool { return es[i].off > es[j].off })
	src := string(b)
	var docs []edit
	for _, e := range es {
		if e.off < 0 {
			docs = append(docs, e)
			continue
		}
		if !strings.HasPrefix(src[e.off:], e.old) {
			return fmt.Errorf("%s:%d: expected %s", file, e.off, e.old)
		}
		src = src[:e.off] + e.new + src[e.off+len(e.old):]
	}
	for _, e := range docs {
		re := regexp.MustCompile(`(?m)^(\s*// )` + regexp.QuoteMeta(e.old) + `\b`)
		src = re.ReplaceAllString(src, "${1}"+e.new)
	}
	return os.WriteFile(file, []byte(src), 0o644)
}

// lowerName is name unexported: its leading upper-case run lowered, but
// for the letter that starts the next word (HTTPServer -> httpServer,
// ID -> id, New -> new).
func lowerName(name string) string {
	r := []rune(name)
	i := 0
	for i < len(r) && unicode.IsUpper(r[i]) {
		i++
	}
	switch {
	case i == 0:
		return name
	case i == 1 || i == len(r):
	case unicode.IsLower(r[i]):
		i-- // the last upper-case letter starts the next word
	}
	for j := 0; j < i; j++ {
		r[j] = unicode.ToLower(r[j])
	}
	return string(r)
}
