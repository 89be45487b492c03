package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkgen/zkgen/spec"
)

// output is what a spec generates: the files of templates.Generate and
// where they go.
type output struct {
	specPath string            // the spec file as given with -f, cleaned
	dir      string            // the directory of the spec file; generated paths are relative to it
	files    map[string][]byte // generated sources by slash-separated path relative to dir
	names    []string          // the keys of files, sorted
}

// target is the file system path of the generated file name.
func (o *output) target(name string) string {
	return filepath.Join(o.dir, filepath.FromSlash(name))
}

// allowOutsideFlag registers --allow-outside, the consent load needs for
// an output path outside the spec's directory.
func allowOutsideFlag(cmd *cobra.Command, allow *bool) {
	cmd.Flags().BoolVar(allow, "allow-outside", false, "allow the spec's output path to leave the spec's directory (../)")
}

// load reads and parses the spec at specPath and generates its files. The
// error is a *failure: ExitFailure for a missing or unreadable spec and for
// spec errors (from Parse or Generate), ExitInternal otherwise. An output
// path outside the spec's directory is a spec error unless allowOutside.
func (a *app) load(specPath string, allowOutside bool) (*output, error) {
	specPath = filepath.Clean(specPath)
	s, err := parseSpec(specPath)
	if err != nil {
		return nil, err
	}
	if s.OutputOutside() && !allowOutside {
		return nil, specFailure(spec.Errors{{File: specPath, Pos: s.OutputPos, Field: "output",
			Msg: fmt.Sprintf("%q is outside the spec's directory; zkgen writes there only with --allow-outside", s.Output)}})
	}

	// The generated code names its source spec: give the generator the
	// base name, so that the bytes do not depend on the directory zkgen
	// was run from or on how -f spelled the path.
	base := filepath.Base(specPath)
	gs := *s
	gs.File = base
	files, err := a.generate(&gs)
	if err != nil {
		var es spec.Errors
		if errors.As(err, &es) {
			// Point the messages at the spec as the user named it.
			renamed := make(spec.Errors, len(es))
			for i, e := range es {
				c := *e
				if c.File == base {
					c.File = specPath
				}
				renamed[i] = &c
			}
			return nil, specFailure(renamed)
		}
		return nil, internalErrorf("generate %s: %v", specPath, err)
	}

	o := &output{specPath: specPath, dir: filepath.Dir(specPath), files: files}
	for name := range files {
		// The spec validates its output setting; this only guards against
		// a generator bug writing somewhere unexpected.
		if !validName(name) || !allowOutside && (name == ".." || strings.HasPrefix(name, "../")) {
			return nil, internalErrorf("generate %s: bad generated file path %q; want a clean slash-separated path relative to the spec", specPath, name)
		}
		o.names = append(o.names, name)
	}
	slices.Sort(o.names)
	return o, nil
}

// parseSpec reads and parses the spec at specPath (already cleaned). The
// error is a *failure: ExitFailure for a missing or unreadable spec and for
// spec errors, ExitInternal otherwise.
func parseSpec(specPath string) (*spec.Spec, error) {
	data, err := readSpec(specPath)
	if err != nil {
		return nil, err
	}
	s, err := spec.Parse(specPath, data)
	if err != nil {
		var es spec.Errors
		if errors.As(err, &es) {
			return nil, specFailure(es)
		}
		return nil, internalErrorf("parse %s: %v", specPath, err)
	}
	return s, nil
}

// readSpec reads the spec file at specPath. The error is a *failure
// (ExitFailure) that says how to get a spec when there is none.
func readSpec(specPath string) ([]byte, error) {
	data, err := os.ReadFile(specPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, userErrorf("spec file %s not found (run 'zkgen init' to create one, or name another with -f)", specPath)
	}
	if err != nil {
		return nil, userErrorf("%v", err)
	}
	return data, nil
}

// validName reports whether name is a clean, relative, slash-separated file
// path. It may start with "../" (the spec may put its output beside its own
// directory); load allows that only with --allow-outside.
func validName(name string) bool {
	return name != "" && path.Clean(name) == name && !path.IsAbs(name) &&
		!filepath.IsAbs(filepath.FromSlash(name)) && filepath.VolumeName(filepath.FromSlash(name)) == "" &&
		path.Base(name) != ".." && name != "." && !strings.ContainsRune(name, '\\')
}
