package examples

import (
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocListsExactlyThePrograms: the package doc names every program
// directory once, and nothing that does not exist.
func TestDocListsExactlyThePrograms(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	var listed []string
	for _, m := range regexp.MustCompile(`go run \./examples/(\w+)`).FindAllStringSubmatch(f.Doc.Text(), -1) {
		listed = append(listed, m[1])
	}
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			_, err := os.Stat(e.Name() + "/main.go")
			require.NoError(t, err, "%s has no main.go", e.Name())
			_, err = os.Stat(e.Name() + "/main_test.go")
			require.NoError(t, err, "%s has no test", e.Name())
			dirs = append(dirs, e.Name())
		}
	}
	assert.Equal(t, dirs, listed, "doc.go lists the programs in order")
}
