package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestBinary builds the real zkgen binary and checks what only a separate
// process shows: the exit status passed to os.Exit, the output streams, and
// the version set at link time. The commands themselves are tested
// in-process in internal/cli.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	bin := filepath.Join(t.TempDir(), "zkgen")
	build := exec.Command(goTool, "build", "-o", bin,
		"-ldflags", "-X github.com/zkgen/zkgen/internal/cli.Version=v9.8.7", ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	dir := t.TempDir()
	zkgen := func(args ...string) (code int, stdout, stderr string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit):
			code = exit.ExitCode()
		default:
			t.Fatal(err)
		}
		return code, o.String(), e.String()
	}

	if code, out, errOut := zkgen("version"); code != 0 || out != "zkgen v9.8.7\n" || errOut != "" {
		t.Errorf("version: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := zkgen("validate"); code != 1 || out != "" || errOut == "" {
		t.Errorf("validate without a spec: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := zkgen("init"); code != 0 || errOut != "" {
		t.Errorf("init: exit %d, stderr %q", code, errOut)
	}
	if code, out, errOut := zkgen("generate"); code != 0 || out != "" || errOut != "" {
		t.Errorf("generate: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := zkgen("diff"); code != 0 || out != "" || errOut != "" {
		t.Errorf("diff: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "zkgen.yaml"), []byte("version: 1\npackage: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := zkgen("generate"); code != 1 || out != "" || errOut == "" {
		t.Errorf("generate with a bad spec: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := zkgen("nope"); code != 1 || errOut == "" {
		t.Errorf("unknown command: exit %d, stderr %q", code, errOut)
	}
}
