// Package ddtest holds what the packages' tests share: the walk of
// datadriven trace files, and reachability in a waits-for graph.
package ddtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// Walk runs fn on every trace file under dir, as datadriven.Walk does,
// except the fuzz corpora that go test keeps in dir/fuzz.
func Walk(t *testing.T, dir string, fn func(t *testing.T, path string)) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() == "fuzz" {
			continue
		}
		path := filepath.Join(dir, e.Name())
		t.Run(strings.TrimSuffix(e.Name(), filepath.Ext(e.Name())), func(t *testing.T) {
			datadriven.Walk(t, path, fn)
		})
	}
}
