package golden

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/zkgen/zkgen/internal/cli"
	"github.com/zkgen/zkgen/internal/diff"
	"github.com/zkgen/zkgen/spec"
)

var update = flag.Bool("update", false, "rewrite the expected outputs, stderr.txt files and generated_example/ from what zkgen produces now")

const (
	specFile   = "zkgen.yaml"
	stderrFile = "stderr.txt"
	// kindsPlaceholder stands for the list of every kind in stderr.txt.
	kindsPlaceholder = "<kinds>"
)

// run runs the zkgen command line in-process in the working directory.
func run(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = cli.Run(args, &o, &e)
	return code, o.String(), e.String()
}

// caseDirs lists the case directories: every directory beside this file.
func caseDirs(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	if len(dirs) == 0 {
		t.Fatal("no cases found")
	}
	return dirs
}

func TestGolden(t *testing.T) {
	for _, name := range caseDirs(t) {
		t.Run(name, func(t *testing.T) {
			dir, err := filepath.Abs(name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, specFile)); err != nil {
				t.Fatalf("a case needs a %s: %v", specFile, err)
			}
			if _, err := os.Stat(filepath.Join(dir, stderrFile)); err == nil {
				badSpec(t, dir)
			} else {
				goodSpec(t, dir)
			}
		})
	}
}

// errorLine is the shape of every line a rejected spec prints.
var errorLine = regexp.MustCompile(`^zkgen\.yaml:[0-9]+:[0-9]+: \S`)

// badSpec checks a case whose spec must be rejected with exactly stderr.txt.
func badSpec(t *testing.T, dir string) {
	t.Chdir(dir)
	code, stdout, stderr := run("validate", "-f", specFile)
	if code != cli.ExitFailure || stdout != "" {
		t.Fatalf("zkgen validate: exit code %d (want %d), stdout %q, stderr:\n%s", code, cli.ExitFailure, stdout, stderr)
	}
	for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if !errorLine.MatchString(line) {
			t.Errorf("stderr line is not \"zkgen.yaml:line:col: message\": %q", line)
		}
	}
	path := filepath.Join(dir, stderrFile)
	// The list of every kind, which some messages give, is spelled
	// <kinds> in stderr.txt: adding a kind does not rewrite those files.
	kinds := make([]string, len(spec.Kinds))
	for i, k := range spec.Kinds {
		kinds[i] = string(k)
	}
	listed := strings.ReplaceAll(stderr, strings.Join(kinds, ", "), kindsPlaceholder)
	if *update {
		if err := os.WriteFile(path, []byte(listed), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if want := readFile(t, path); listed != want {
		t.Errorf("stderr differs from %s (-want +got):\n%s", stderrFile,
			diff.Unified("want", "got", []byte(want), []byte(listed), 3))
	}

	// generate rejects the spec with the same errors and writes nothing.
	tmp := t.TempDir()
	copyFile(t, filepath.Join(dir, specFile), filepath.Join(tmp, specFile))
	t.Chdir(tmp)
	code, stdout, genStderr := run("generate", "-f", specFile)
	if code != cli.ExitFailure || stdout != "" || genStderr != stderr {
		t.Errorf("zkgen generate: exit code %d, stdout %q, stderr:\n%s\nwant exit code %d and the stderr of validate",
			code, stdout, genStderr, cli.ExitFailure)
	}
	if got := files(t, tmp); !slices.Equal(slices.Sorted(maps.Keys(got)), []string{specFile}) {
		t.Errorf("generate wrote files for a bad spec: %v", slices.Sorted(maps.Keys(got)))
	}
}

// goodSpec checks a case whose spec must generate exactly the files beside it.
func goodSpec(t *testing.T, dir string) {
	tmp := t.TempDir()
	copyFile(t, filepath.Join(dir, specFile), filepath.Join(tmp, specFile))
	t.Chdir(tmp)
	if code, stdout, stderr := run("generate", "-f", specFile); code != cli.ExitOK || stdout != "" || stderr != "" {
		t.Fatalf("zkgen generate: exit code %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	got := files(t, tmp)
	delete(got, specFile)
	if len(got) == 0 {
		t.Fatal("zkgen generate wrote no files")
	}

	// Generating again finds every file up to date.
	code, stdout, stderr := run("generate", "-v", "-f", specFile)
	if code != cli.ExitOK || stderr != "" || strings.Count(stdout, "unchanged ") != len(got) {
		t.Errorf("second zkgen generate -v: exit code %d, stderr %q, stdout:\n%s\nwant every file unchanged", code, stderr, stdout)
	}

	want := files(t, dir)
	delete(want, specFile)
	if *update {
		for name := range want {
			if _, ok := got[name]; !ok {
				if err := os.Remove(filepath.Join(dir, filepath.FromSlash(name))); err != nil {
					t.Fatal(err)
				}
				removeEmptyParents(dir, filepath.Dir(filepath.Join(dir, filepath.FromSlash(name))))
			}
		}
		for name, data := range got {
			if data == want[name] {
				continue
			}
			path := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		w, ok := want[name]
		switch {
		case !ok:
			t.Errorf("%s is generated but not expected (run go test ./golden -update to add it)", name)
		case w != got[name]:
			t.Errorf("%s differs from the expected output (-want +got):\n%s", name,
				diff.Unified("want/"+name, "got/"+name, []byte(w), []byte(got[name]), 3))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if _, ok := got[name]; !ok {
			t.Errorf("%s is expected but not generated", name)
		}
	}

	if t.Failed() {
		return
	}
	// The case directory itself is up to date for zkgen diff too.
	t.Chdir(dir)
	if code, stdout, stderr := run("diff", "-f", specFile); code != cli.ExitOK {
		t.Errorf("zkgen diff in the case directory: exit code %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
}

// TestGeneratedExample regenerates the committed generated_example/ and
// requires it to be up to date.
func TestGeneratedExample(t *testing.T) {
	const example = "../generated_example/" + specFile
	if _, err := os.Stat(example); errors.Is(err, fs.ErrNotExist) {
		t.Skip("generated_example/ does not exist yet")
	}
	if *update {
		if code, stdout, stderr := run("generate", "-f", example); code != cli.ExitOK {
			t.Fatalf("zkgen generate -f %s: exit code %d, stdout %q, stderr:\n%s", example, code, stdout, stderr)
		}
	}
	if code, stdout, stderr := run("diff", "-f", example); code != cli.ExitOK || stdout != "" || stderr != "" {
		t.Errorf("generated_example/ is stale (go test ./golden -update, or zkgen generate -f generated_example/zkgen.yaml):\nexit code %d\n%s%s",
			code, stdout, stderr)
	}
}

// files reads every regular file under dir, keyed by slash-separated path
// relative to dir.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			t.Errorf("%s is not a regular file", path)
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// removeEmptyParents removes dir and its parents up to (not including) top
// while they are empty.
func removeEmptyParents(top, dir string) {
	for dir != top && strings.HasPrefix(dir, top) {
		if os.Remove(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	if err := os.WriteFile(to, []byte(readFile(t, from)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestEdgeNamesCompile builds the generated package of edge_names, whose
// resources are named like the generated package's own identifiers (new,
// api, client, run, sess, client_handle): the proof that they cannot collide
// is that the Go compiler accepts it.
func TestEdgeNamesCompile(t *testing.T) {
	out, err := exec.Command("go", "build", "-o", os.DevNull, "./edge_names").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./golden/edge_names: %v\n%s", err, out)
	}
}
