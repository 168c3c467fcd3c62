package txnlock_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// maxExported bounds the root package's API: its exported top-level names,
// the exported methods of its exported types, their exported fields and
// the methods of its exported interfaces. The package is the vocabulary
// every user reads first; what only managers and detectors need lives in
// internal packages.
const maxExported = 190

func TestExportedIdentifiers(t *testing.T) {
	names := exportedIdentifiers(t, ".")
	t.Logf("%d exported identifiers", len(names))
	require.LessOrEqual(t, len(names), maxExported, "%s", strings.Join(names, "\n"))
	// The seam between managers and detectors is internal: the root
	// package names only Detector and its one method.
	for _, n := range []string{"WaitGraph", "Waiter", "WaitEdge", "LockCounter", "Endpoint"} {
		require.NotContains(t, names, n)
	}
}

// exportedIdentifiers lists the exported identifiers of the non-test files
// in dir, as "Name" or "Type.Name".
func exportedIdentifiers(t *testing.T, dir string) []string {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	require.NoError(t, err)
	pkg := pkgs["txnlock"]
	require.NotNil(t, pkg)
	var names []string
	exportedType := map[string]bool{}
	for _, f := range pkg.Files {
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok {
				for _, s := range g.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.IsExported() {
						exportedType[ts.Name.Name] = true
					}
				}
			}
		}
	}
	for _, f := range pkg.Files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					names = append(names, d.Name.Name)
					continue
				}
				recv := d.Recv.List[0].Type
				if s, ok := recv.(*ast.StarExpr); ok {
					recv = s.X
				}
				if id, ok := recv.(*ast.Ident); ok && exportedType[id.Name] {
					names = append(names, id.Name+"."+d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						names = append(names, s.Name.Name)
						var fields *ast.FieldList
						switch tt := s.Type.(type) {
						case *ast.StructType:
							fields = tt.Fields
						case *ast.InterfaceType:
							fields = tt.Methods
						}
						if fields == nil {
							continue
						}
						for _, fl := range fields.List {
							for _, n := range fl.Names {
								if n.IsExported() {
									names = append(names, s.Name.Name+"."+n.Name)
								}
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(names)
	return names
}
