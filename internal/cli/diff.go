package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/zkgen/zkgen/internal/diff"
)

// diffContext is the number of unchanged lines shown around each change.
const diffContext = 3

func (a *app) diffCommand() *cobra.Command {
	var specPath string
	var allowOutside bool
	cmd := &cobra.Command{
		Use:   "diff",
		Short: "Compare the generated files on disk with the spec",
		Long: `Generate the code for the spec in memory and compare it with the files on
disk, without writing anything.

Exits 0 silently when every generated file is up to date. Otherwise prints a
unified diff (3 lines of context) from the file on disk (a/) to what generate
would write (b/) for each stale or missing file, with paths relative to the
directory of the spec file, and exits 1. Run it in CI to catch a spec
changed without regenerating, and generated code edited by hand.

Files on disk that the spec no longer generates are not reported.`,
		Example: `  zkgen diff
  zkgen diff -f svc/zkgen.yaml   # in CI: fails when svc/ needs zkgen generate`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := a.load(specPath, allowOutside)
			if err != nil {
				return err
			}
			stale := 0
			for _, name := range o.names {
				old, err := os.ReadFile(o.target(name))
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					return internalErrorf("%v", err)
				}
				d := diff.Unified("a/"+name, "b/"+name, old, o.files[name], diffContext)
				if d == "" {
					continue
				}
				stale++
				if _, err := fmt.Fprint(a.stdout, d); err != nil {
					return internalErrorf("write diff: %v", err)
				}
			}
			if stale > 0 {
				files := "files are"
				if stale == 1 {
					files = "file is"
				}
				return userErrorf("%d generated %s out of date; run 'zkgen generate -f %s'", stale, files, o.specPath)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&specPath, "file", "f", defaultSpec, "spec file to read")
	allowOutsideFlag(cmd, &allowOutside)
	return cmd
}
