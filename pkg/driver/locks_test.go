package driver

import (
	"go/ast"
	"go/types"
	"slices"
	"testing"
)

// serviceOf is the CSI service each server type serves.
var serviceOf = map[string]string{"identity": "Identity", "controller": "Controller", "snapshotter": "Controller",
	"groups": "GroupController", "node": "Node"}

// TestRPCLocksAsStated: every RPC of the servers takes exactly the kinds
// of call lock rpcLocks states for it (locks.go), directly or through the
// package's functions it calls, and every RPC rpcLocks names exists. The
// background gc's pass is checked from core.collect.
func TestRPCLocksAsStated(t *testing.T) {
	fset, files := parseDriver(t)
	servers := serverTypes(files)
	info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{},
		Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: emptyImporter{}, Error: func(error) {}}
	conf.Check("github.com/chainvol/chainvol/pkg/driver", fset, files, info)

	kinds := map[string]bool{"volumeNameLock": true, "snapshotNameLock": true, "groupNameLock": true, "lvolLock": true}
	calls := map[types.Object][]types.Object{} // a function's callees in the package
	roots := map[string]types.Object{}         // "Service.RPC" → method
	for _, f := range files {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			obj := info.Defs[fn.Name]
			if fn.Recv != nil {
				recv := recvName(fn.Recv.List[0].Type)
				if svc, ok := serviceOf[recv]; ok && servers[recv] && fn.Name.IsExported() {
					roots[svc+"."+fn.Name.Name] = obj
				}
				if recv == "core" && fn.Name.Name == "collect" {
					roots["gc.collect"] = obj
				}
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok {
					if o, ok := info.Uses[id].(*types.Func); ok && o.Pkg() != nil && o.Pkg().Path() == "github.com/chainvol/chainvol/pkg/driver" {
						calls[obj] = append(calls[obj], o)
					}
				}
				return true
			})
		}
	}
	for rpc, root := range roots {
		seen := map[types.Object]bool{}
		var took []string
		var walk func(types.Object)
		walk = func(o types.Object) {
			if seen[o] {
				return
			}
			seen[o] = true
			if kinds[o.Name()] && !slices.Contains(took, o.Name()) {
				took = append(took, o.Name())
			}
			for _, c := range calls[o] {
				walk(c)
			}
		}
		walk(root)
		slices.Sort(took)
		want := slices.Sorted(slices.Values(rpcLocks[rpc]))
		if !slices.Equal(took, want) {
			t.Errorf("%s takes %v, rpcLocks states %v", rpc, took, want)
		}
	}
	for rpc := range rpcLocks {
		if roots[rpc] == nil {
			t.Errorf("rpcLocks names %s, which no server serves", rpc)
		}
	}
	if len(roots) < 30 {
		t.Errorf("found %d RPCs, want the 30 or so the services serve", len(roots))
	}
}
