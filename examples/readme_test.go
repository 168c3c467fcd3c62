package examples

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestREADMEBuilds: every Go block of the README is a whole program that
// compiles as written, in this module (so an import of a package the
// module does not require fails too). Each block is built as
// examples/readme<N>/main.go through a build overlay: nothing is
// written into the source tree.
func TestREADMEBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	text, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(text), -1)
	require.NotEmpty(t, blocks, "the README has Go blocks")
	here, err := os.Getwd()
	require.NoError(t, err)
	overlay := map[string]string{}
	var pkgs []string
	tmp := t.TempDir()
	for i, b := range blocks {
		require.True(t, strings.HasPrefix(b[1], "package main\n"), "README Go block %d is not a whole program:\n%s", i+1, b[1])
		src := filepath.Join(tmp, "block"+string(rune('1'+i))+".go")
		require.NoError(t, os.WriteFile(src, []byte(b[1]), 0o644))
		dir := "readme" + string(rune('1'+i))
		overlay[filepath.Join(here, dir, "main.go")] = src
		pkgs = append(pkgs, "./"+dir)
	}
	js, err := json.Marshal(map[string]any{"Replace": overlay})
	require.NoError(t, err)
	ov := filepath.Join(tmp, "overlay.json")
	require.NoError(t, os.WriteFile(ov, js, 0o644))
	for _, pkg := range pkgs {
		cmd := exec.Command("go", "build", "-overlay", ov, "-o", os.DevNull, pkg)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "README block %s does not build:\n%s", pkg, out)
	}
}
