package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

func (a *app) generateCommand() *cobra.Command {
	var specPath string
	var allowOutside bool
	var verbose bool
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Write the Go code for the spec",
		Long: `Parse and validate the spec, then write every generated Go file at its
path relative to the directory of the spec file (the spec's output setting,
default <package>_zkgen.go), creating missing directories. An output path
that leaves the spec's directory (../) is refused unless --allow-outside is
given (validate and diff take the same flag).

Writing is all or nothing: when the spec has errors, nothing is written and
every error is printed as file:line:col: field: message. Files are written to
temporary files beside their targets first and renamed into place only when
all of them are written. A file whose content is already up to date is not
rewritten, so its modification time stays as it is.

Nothing is printed on success unless -v is given.`,
		Example: `  zkgen generate                    # reads ./zkgen.yaml
  zkgen generate -f svc/zkgen.yaml  # paths relative to svc/
  zkgen generate -v                 # one line per file: wrote or unchanged

  # with "tool github.com/zkgen/zkgen/cmd/zkgen" in go.mod, in a Go file
  # beside the spec:
  //go:generate go tool zkgen generate`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := a.load(specPath, allowOutside)
			if err != nil {
				return err
			}
			wrote, err := writeFiles(o)
			if err != nil {
				return err
			}
			if verbose {
				for _, name := range o.names {
					status := "unchanged"
					if wrote[name] {
						status = "wrote"
					}
					fmt.Fprintf(a.stdout, "%s %s\n", status, o.target(name))
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&specPath, "file", "f", defaultSpec, "spec file to read")
	allowOutsideFlag(cmd, &allowOutside)
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print one line per generated file (wrote or unchanged)")
	return cmd
}

// writeFiles writes the files of o that differ from the disk and reports
// which ones it wrote. Either every changed file is written or, on error,
// none is: each goes to a temporary file in its target directory first, and
// only when all are complete are they renamed over their targets. On error
// the temporary files and the directories created for them are removed. The
// only failure it cannot undo is a rename failing after others succeeded.
func writeFiles(o *output) (wrote map[string]bool, err error) {
	type pending struct{ name, target, temp string }
	var todo []*pending
	var madeDirs []string // directories created here, parents first
	defer func() {
		if err == nil {
			return
		}
		for _, p := range todo {
			if p.temp != "" {
				os.Remove(p.temp)
			}
		}
		for i := len(madeDirs) - 1; i >= 0; i-- {
			os.Remove(madeDirs[i]) // only empty ones go; never what others put there
		}
	}()

	for _, name := range o.names {
		target := o.target(name)
		if old, err := os.ReadFile(target); err == nil && bytes.Equal(old, o.files[name]) {
			continue
		}
		p := &pending{name: name, target: target}
		todo = append(todo, p)

		dir := filepath.Dir(target)
		made, err := mkdirAll(dir)
		madeDirs = append(madeDirs, made...)
		if err != nil {
			return nil, internalErrorf("create directory for %s: %v", target, err)
		}
		f, err := os.CreateTemp(dir, "."+filepath.Base(target)+".*.zkgen-tmp")
		if err != nil {
			return nil, internalErrorf("write %s: %v", target, err)
		}
		p.temp = f.Name()
		_, err = f.Write(o.files[name])
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(p.temp, fileMode(target))
		}
		if err != nil {
			return nil, internalErrorf("write %s: %v", target, err)
		}
	}

	wrote = make(map[string]bool, len(todo))
	for _, p := range todo {
		if err := os.Rename(p.temp, p.target); err != nil {
			return nil, internalErrorf("write %s: %v", p.target, err)
		}
		p.temp = ""
		wrote[p.name] = true
	}
	return wrote, nil
}

// fileMode is the mode for a generated file: the mode of the file it
// replaces, or 0644 for a new one.
func fileMode(target string) fs.FileMode {
	if fi, err := os.Stat(target); err == nil && fi.Mode().IsRegular() {
		return fi.Mode().Perm()
	}
	return 0o644
}

// mkdirAll is os.MkdirAll that also returns the directories it created,
// outermost first, so that a failed generate can remove them again.
func mkdirAll(dir string) (made []string, err error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		_, err := os.Stat(d)
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		err := os.Mkdir(missing[i], 0o755)
		switch {
		case err == nil:
			made = append(made, missing[i])
		case !errors.Is(err, fs.ErrExist): // else created meanwhile by someone else
			return made, err
		}
	}
	return made, nil
}
