package driver

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestServersAreSiblings keeps the servers side by side (issue 32): no
// method of one CSI server uses (calls or takes as a value) a method of
// another server type, and no server's struct holds, however deeply, a
// field of another server type, so that no server can reach another's
// methods without naming it here. A server type is one declared in
// servers.go or one that embeds a csi.Unimplemented*Server. The package is
// type-checked from its non-test sources with the imports left empty: only
// the package's own types and methods need resolving.
func TestServersAreSiblings(t *testing.T) {
	fset, files := parseDriver(t)
	servers := serverTypes(files)
	if len(servers) < 6 {
		t.Fatalf("found %d server types (%v), want at least the six of servers.go", len(servers), servers)
	}
	info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}, Defs: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: emptyImporter{}, Error: func(error) {}}
	pkg, _ := conf.Check("github.com/chainvol/chainvol/pkg/driver", fset, files, info)

	var bad []string
	for _, f := range files {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Body == nil {
				continue
			}
			own := recvName(fn.Recv.List[0].Type)
			if !servers[own] {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				s, ok := info.Selections[sel]
				if !ok || s.Kind() == types.FieldVal {
					return true
				}
				m, ok := s.Obj().(*types.Func)
				if !ok {
					return true
				}
				other := methodRecv(m)
				if servers[other] && other != own {
					bad = append(bad, fset.Position(sel.Sel.Pos()).String()+": "+own+"."+fn.Name.Name+" uses "+other+"."+m.Name())
				}
				return true
			})
		}
	}
	for name := range servers {
		obj := pkg.Scope().Lookup(name)
		if obj == nil {
			continue
		}
		for _, path := range reachesServer(obj.Type(), name, servers, nil, map[types.Type]bool{}) {
			bad = append(bad, "server "+name+" holds "+path)
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

// parseDriver parses the package's non-test Go files.
func parseDriver(t *testing.T) (*token.FileSet, []*ast.File) {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		src, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, n, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		fileNames[f] = n
		files = append(files, f)
	}
	return fset, files
}

// serverTypes names the struct types declared in servers.go and those that
// embed a csi.Unimplemented*Server.
func serverTypes(files []*ast.File) map[string]bool {
	servers := map[string]bool{}
	for _, f := range files {
		inServers := fileNames[f] == "servers.go"
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				if inServers && !strings.HasSuffix(ts.Name.Name, "Service") {
					servers[ts.Name.Name] = true
				}
				for _, fld := range st.Fields.List {
					if sel, ok := fld.Type.(*ast.SelectorExpr); ok && len(fld.Names) == 0 &&
						strings.HasPrefix(sel.Sel.Name, "Unimplemented") && strings.HasSuffix(sel.Sel.Name, "Server") {
						servers[ts.Name.Name] = true
					}
				}
			}
		}
	}
	return servers
}

// fileNames are the names of the files parseDriver parsed.
var fileNames = map[*ast.File]string{}

// recvName is the type name of a receiver expression (T or *T).
func recvName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// methodRecv is the name of the named type method m is declared on.
func methodRecv(m *types.Func) string {
	sig, ok := m.Type().(*types.Signature)
	if !ok || sig.Recv() == nil {
		return ""
	}
	t := sig.Recv().Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name()
	}
	return ""
}

// reachesServer lists the field paths from t to a server type other than
// own (through pointers, slices, arrays, maps and struct fields).
func reachesServer(t types.Type, own string, servers map[string]bool, path []string, seen map[types.Type]bool) []string {
	if seen[t] {
		return nil
	}
	seen[t] = true
	switch u := t.(type) {
	case *types.Named:
		if n := u.Obj().Name(); servers[n] && n != own && len(path) > 0 {
			return []string{strings.Join(path, ".") + " (" + n + ")"}
		}
		if u.Obj().Pkg() == nil || u.Obj().Pkg().Path() != "github.com/chainvol/chainvol/pkg/driver" {
			return nil
		}
		return reachesServer(u.Underlying(), own, servers, path, seen)
	case *types.Pointer:
		return reachesServer(u.Elem(), own, servers, path, seen)
	case *types.Slice:
		return reachesServer(u.Elem(), own, servers, path, seen)
	case *types.Array:
		return reachesServer(u.Elem(), own, servers, path, seen)
	case *types.Map:
		return reachesServer(u.Elem(), own, servers, path, seen)
	case *types.Struct:
		var out []string
		for i := 0; i < u.NumFields(); i++ {
			f := u.Field(i)
			out = append(out, reachesServer(f.Type(), own, servers, append(path[:len(path):len(path)], f.Name()), seen)...)
		}
		return out
	}
	return nil
}

// emptyImporter gives every import an empty, complete package: the check
// needs only the driver's own types, and type-checking the imports from
// source would take most of a minute.
type emptyImporter struct{}

func (emptyImporter) Import(path string) (*types.Package, error) {
	p := types.NewPackage(path, filepath.Base(path))
	p.MarkComplete()
	return p, nil
}
