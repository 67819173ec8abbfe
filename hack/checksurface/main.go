// Command checksurface lists the exported identifiers under pkg/ that no
// other package's non-test code uses: functions, types, variables,
// constants and methods that are exported by accident. A method counts as
// used when another package calls it or when it implements an interface
// (its own package's, another's or the standard library's); a type counts
// as used when another package names it or reaches it through something it
// uses (a result, a parameter, a field). allow.txt names what is public on
// purpose, each with its reason.
//
// It fails when the identifiers listed (not allowed) are more than
// -max-share of the exported ones (5% by default, the target that keeps
// the surface what is used). With -fix it unexports what it lists where
// nothing stops it (a test of another package uses the name, or the lower
// case name is taken at some use), then the build must be checked.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"go/token"
	"go/types"
	"os"
	"path"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
)

const module = "ebb.dev/ebb"

func main() {
	maxShare := flag.Float64("max-share", 0.05, "fail when more than this share of the exported identifiers under pkg/ is unused by other packages")
	fix := flag.Bool("fix", false, "unexport the unused identifiers where it is safe")
	allowFile := flag.String("allow", "hack/checksurface/allow.txt", "the identifiers that are public on purpose, one a line (PKG.NAME or PKG.TYPE.METHOD) with # comments")
	flag.Parse()
	allow, err := readAllow(*allowFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "check-surface:", err)
		os.Exit(2)
	}
	pkgs, err := load(*fix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "check-surface:", err)
		os.Exit(2)
	}
	s := newSurface(pkgs)
	unused := s.unused(allow)
	for _, id := range unused {
		fmt.Printf("check-surface: %s is exported but no other package's code uses it: unexport it, delete it, or name it in %s with why\n", id.key, *allowFile)
	}
	share := float64(len(unused)) / float64(max(s.exported, 1))
	fmt.Printf("check-surface: %d of %d exported identifiers under pkg/ unused by other packages (%.1f%%; at most %.0f%%); %d allowed\n",
		len(unused), s.exported, 100*share, 100**maxShare, s.allowed)
	if stale := s.stale(allow); len(stale) > 0 {
		for _, l := range stale {
			fmt.Fprintf(os.Stderr, "check-surface: %s names %s, which matches no exported identifier under pkg/: remove the line\n", *allowFile, l)
		}
		os.Exit(1)
	}
	if *fix {
		n, skipped := s.unexport(unused)
		fmt.Printf("check-surface: unexported %d; %d left as they are (a test of another package uses them, or the name is taken)\n", n, len(skipped))
		for _, why := range skipped {
			fmt.Println("  ", why)
		}
		return
	}
	if share > *maxShare {
		os.Exit(1)
	}
}

// allowList is what allow.txt names: identifiers (PKG.NAME,
// PKG.TYPE.METHOD), patterns of them (path.Match: pkg/config.Annotation*),
// and types whose constants are all public ("PKG.TYPE constants": the
// values of an enumeration that people read, such as reason codes).
type allowList struct {
	lines     []string
	constants map[string]bool // PKG.TYPE
}

func (a allowList) allows(id ident, obj types.Object) bool {
	for _, l := range a.lines {
		if ok, _ := path.Match(l, id.key); ok {
			return true
		}
	}
	if c, ok := obj.(*types.Const); ok {
		if named, ok := c.Type().(*types.Named); ok && named.Obj().Pkg() != nil {
			return a.constants[rel(named.Obj().Pkg().Path())+"."+named.Obj().Name()]
		}
	}
	return false
}

// readAllow reads the allow-list: one entry a line (PKG relative to the
// module), # starts a comment.
func readAllow(path string) (allowList, error) {
	f, err := os.Open(path)
	if err != nil {
		return allowList{}, fmt.Errorf("reading the allow-list: %w", err)
	}
	defer f.Close()
	allow := allowList{constants: map[string]bool{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		line = strings.TrimSpace(line)
		if t, ok := strings.CutSuffix(line, " constants"); ok {
			allow.constants[strings.TrimSpace(t)] = true
		} else if line != "" {
			allow.lines = append(allow.lines, line)
		}
	}
	return allow, sc.Err()
}

// load type-checks every package of the module, with its tests when fix
// needs them (to rename inside them, and to see which tests use what).
func load(tests bool) ([]*packages.Package, error) {
	cfg := &packages.Config{
		Mode:  packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedImports,
		Tests: tests,
		Fset:  token.NewFileSet(),
		// The end-to-end suites (test/k8s, test/node) build with tags:
		// what they use must be seen too.
		BuildFlags: []string{"-tags=k8s,node"},
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, fmt.Errorf("loading the module: %w", err)
	}
	var bad []string
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			bad = append(bad, e.Error())
		}
	})
	if len(bad) > 0 {
		return nil, fmt.Errorf("the module does not type-check:\n%s", strings.Join(bad, "\n"))
	}
	return pkgs, nil
}

// ident is one exported identifier under pkg/.
type ident struct {
	key  string // pkg/x.Name or pkg/x.Type.Method
	pos  token.Position
	name string
}

// surface is what the module exports and what uses it.
type surface struct {
	pkgs     []*packages.Package
	fset     *token.FileSet
	exported int
	allowed  int                     // unused by other packages but allowed
	declared map[string]bool         // every exported key
	decls    map[string]ident        // position key -> identifier
	objs     map[string]types.Object // position key -> one of its objects
	used     map[string]bool         // position key -> used by another package's non-test code
	testUse  map[string]bool         // position key -> used by another package's test code
	ifaces   []*types.Interface      // every named interface reachable
	posKey   func(token.Pos) string  // a declaration's position, the same across a package's test variants
	uses     map[string][]token.Pos  // position key -> every identifier that denotes it, in every variant
	seenUse  map[string]map[token.Pos]bool
	variants map[string]*packages.Package
}

func newSurface(pkgs []*packages.Package) *surface {
	s := &surface{pkgs: pkgs, declared: map[string]bool{}, decls: map[string]ident{}, objs: map[string]types.Object{},
		used: map[string]bool{}, testUse: map[string]bool{}, uses: map[string][]token.Pos{}, seenUse: map[string]map[token.Pos]bool{}}
	if len(pkgs) > 0 {
		s.fset = pkgs[0].Fset
	}
	s.posKey = func(p token.Pos) string {
		pos := s.fset.Position(p)
		return fmt.Sprintf("%s:%d", pos.Filename, pos.Offset)
	}
	s.collectInterfaces()
	for _, p := range pkgs {
		if isPkg(p.PkgPath) && !isTestVariant(p) {
			s.declare(p)
		}
	}
	for _, p := range pkgs {
		s.recordUses(p)
	}
	s.implementations()
	s.reach()
	return s
}

func isPkg(path string) bool { return strings.HasPrefix(path, module+"/pkg/") }

// isTestVariant: a package compiled with its tests (p [p.test], p_test,
// p.test).
func isTestVariant(p *packages.Package) bool {
	return strings.Contains(p.ID, " [") || strings.HasSuffix(p.ID, ".test") || strings.HasSuffix(p.PkgPath, "_test")
}

func rel(path string) string { return strings.TrimPrefix(path, module+"/") }

// declare records the exported package-level objects of p and the
// exported methods of its named types.
func (s *surface) declare(p *packages.Package) {
	scope := p.Types.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		s.add(rel(p.PkgPath)+"."+name, obj)
		tn, ok := obj.(*types.TypeName)
		if !ok || tn.IsAlias() {
			continue
		}
		named, ok := tn.Type().(*types.Named)
		if !ok {
			continue
		}
		if _, isIface := named.Underlying().(*types.Interface); isIface {
			continue
		}
		for i := 0; i < named.NumMethods(); i++ {
			m := named.Method(i)
			if m.Exported() {
				s.add(rel(p.PkgPath)+"."+name+"."+m.Name(), m)
			}
		}
	}
}

func (s *surface) add(key string, obj types.Object) {
	k := s.posKey(obj.Pos())
	s.exported++
	s.declared[key] = true
	s.decls[k] = ident{key: key, pos: s.fset.Position(obj.Pos()), name: obj.Name()}
	s.objs[k] = obj
}

// recordUses marks what p's files use of other packages, and remembers
// every identifier of a declared object (for -fix).
func (s *surface) recordUses(p *packages.Package) {
	if p.TypesInfo == nil {
		return
	}
	record := func(id token.Pos, obj types.Object) {
		if obj == nil || obj.Pkg() == nil || !isPkg(obj.Pkg().Path()) {
			return
		}
		k := s.posKey(obj.Pos())
		if _, ok := s.decls[k]; !ok {
			return
		}
		if s.seenUse[k] == nil {
			s.seenUse[k] = map[token.Pos]bool{}
		}
		if !s.seenUse[k][id] {
			s.seenUse[k][id] = true
			s.uses[k] = append(s.uses[k], id)
		}
		if samePackage(obj.Pkg().Path(), p.PkgPath) {
			return
		}
		if strings.HasSuffix(s.fset.Position(id).Filename, "_test.go") {
			s.testUse[k] = true
		} else {
			s.used[k] = true
		}
	}
	for id, obj := range p.TypesInfo.Uses {
		record(id.Pos(), originOf(obj))
	}
	for id, obj := range p.TypesInfo.Defs {
		if obj != nil {
			record(id.Pos(), originOf(obj))
		}
	}
}

// samePackage: a package and its external test package are one for this
// check's purpose only when it comes to renaming, not to use: p_test is
// another package, so its uses count as a test's.
func samePackage(decl, user string) bool { return decl == user }

// originOf maps an instantiated generic object to its declaration.
func originOf(obj types.Object) types.Object {
	switch o := obj.(type) {
	case *types.Func:
		return o.Origin()
	case *types.Var:
		return o.Origin()
	}
	return obj
}

// collectInterfaces gathers every named interface type of every package
// the module's packages reach.
func (s *surface) collectInterfaces() {
	seen := map[*types.Package]bool{}
	var walk func(tp *types.Package)
	walk = func(tp *types.Package) {
		if tp == nil || seen[tp] {
			return
		}
		seen[tp] = true
		scope := tp.Scope()
		for _, name := range scope.Names() {
			if tn, ok := scope.Lookup(name).(*types.TypeName); ok {
				if it, ok := tn.Type().Underlying().(*types.Interface); ok && it.NumMethods() > 0 {
					s.ifaces = append(s.ifaces, it)
				}
			}
		}
		for _, imp := range tp.Imports() {
			walk(imp)
		}
	}
	for _, p := range s.pkgs {
		walk(p.Types)
	}
	s.ifaces = append(s.ifaces, types.Universe.Lookup("error").Type().Underlying().(*types.Interface))
}

// implementations marks the methods that implement an interface.
func (s *surface) implementations() {
	for k, obj := range s.objs {
		m, ok := obj.(*types.Func)
		if !ok || s.used[k] {
			continue
		}
		sig := m.Type().(*types.Signature)
		if sig.Recv() == nil {
			continue
		}
		recv := sig.Recv().Type()
		if ptr, ok := recv.(*types.Pointer); ok {
			recv = ptr.Elem()
		}
		for _, it := range s.ifaces {
			if hasMethod(it, m.Name()) && (types.Implements(recv, it) || types.Implements(types.NewPointer(recv), it)) {
				s.used[k] = true
				break
			}
		}
	}
}

func hasMethod(it *types.Interface, name string) bool {
	for i := 0; i < it.NumMethods(); i++ {
		if it.Method(i).Name() == name {
			return true
		}
	}
	return false
}

// reach marks the named types of pkg/ that something used reaches: a
// used function's or method's parameters and results, a used variable's
// type, a used type's underlying type (its fields), a used method's
// receiver.
func (s *surface) reach() {
	for changed := true; changed; {
		changed = false
		for k, obj := range s.objs {
			if !s.used[k] {
				continue
			}
			s.walkType(obj.Type(), map[types.Type]bool{}, &changed)
			if tn, ok := obj.(*types.TypeName); ok {
				s.walkType(tn.Type().Underlying(), map[types.Type]bool{}, &changed)
			}
		}
	}
}

func (s *surface) walkType(t types.Type, seen map[types.Type]bool, changed *bool) {
	if t == nil || seen[t] {
		return
	}
	seen[t] = true
	switch t := t.(type) {
	case *types.Named:
		obj := t.Origin().Obj()
		if obj.Pkg() != nil && isPkg(obj.Pkg().Path()) {
			if k := s.posKey(obj.Pos()); s.objs[k] != nil && !s.used[k] {
				s.used[k] = true
				*changed = true
			}
		}
		for i := 0; i < t.TypeArgs().Len(); i++ {
			s.walkType(t.TypeArgs().At(i), seen, changed)
		}
	case *types.Pointer:
		s.walkType(t.Elem(), seen, changed)
	case *types.Slice:
		s.walkType(t.Elem(), seen, changed)
	case *types.Array:
		s.walkType(t.Elem(), seen, changed)
	case *types.Map:
		s.walkType(t.Key(), seen, changed)
		s.walkType(t.Elem(), seen, changed)
	case *types.Chan:
		s.walkType(t.Elem(), seen, changed)
	case *types.Signature:
		for i := 0; i < t.Params().Len(); i++ {
			s.walkType(t.Params().At(i).Type(), seen, changed)
		}
		for i := 0; i < t.Results().Len(); i++ {
			s.walkType(t.Results().At(i).Type(), seen, changed)
		}
	case *types.Struct:
		for i := 0; i < t.NumFields(); i++ {
			if f := t.Field(i); f.Exported() || f.Embedded() {
				s.walkType(f.Type(), seen, changed)
			}
		}
	case *types.Interface:
		for i := 0; i < t.NumMethods(); i++ {
			s.walkType(t.Method(i).Type(), seen, changed)
		}
	}
}

// unused lists the exported identifiers no other package's code uses and
// the allow-list does not name, sorted.
func (s *surface) unused(allow allowList) []ident {
	var out []ident
	for k, id := range s.decls {
		switch {
		case s.used[k]:
		case allow.allows(id, s.objs[k]):
			s.allowed++
		default:
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// stale lists the allow-list's lines that match no exported identifier.
func (s *surface) stale(allow allowList) []string {
	var out []string
	for _, l := range allow.lines {
		found := false
		for key := range s.declared {
			if ok, _ := path.Match(l, key); ok {
				found = true
				break
			}
		}
		if !found {
			out = append(out, l)
		}
	}
	for t := range allow.constants {
		if !s.declared[t] {
			out = append(out, t+" constants")
		}
	}
	sort.Strings(out)
	return out
}

// keyOf finds the position key of an identifier.
func (s *surface) keyOf(id ident) string {
	for k, d := range s.decls {
		if d.key == id.key {
			return k
		}
	}
	return ""
}
