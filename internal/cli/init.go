package cli

import (
	"errors"
	"fmt"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkgen/zkgen/spec"
)

// SchemaURL is where the spec's JSON Schema is published (the file
// spec/zkgen.schema.json of the repository; 'zkgen schema' prints the same).
const SchemaURL = "https://raw.githubusercontent.com/zkgen/zkgen/main/spec/zkgen.schema.json"

// starterSpec is the spec "zkgen init" writes; PACKAGE is replaced by the
// --package name. It must stay valid and generate code (tests check it).
const starterSpec = `# yaml-language-server: $schema=` + SchemaURL + `
# zkgen spec: the ZooKeeper coordination resources of one service.
#
#   zkgen validate    check this file and print every error
#   zkgen generate    write the Go package declared below
#   zkgen diff        in CI: fail when the generated code is stale
#
# Names are snake_case here and CamelCase in Go (order_lock -> OrderLock).

version: 1                           # spec format version; required, first key
package: PACKAGE                     # Go package name of the generated code
output: PACKAGE/PACKAGE_zkgen.go     # generated file, relative to this spec
root: /myservice                     # every resource path below lives under this znode
# acl: world_all                     # default ACL: world_all | world_read | creator_all

# Payload types for queues, priority queues, elections, groups, configs and
# two-phase commits: declared fields (string, int, bool, float, bytes,
# duration, time, []T, other declared types), or an existing Go type. Both
# are stored as JSON.
# types:
#   Job:    {fields: {name: string, attempt: int}}
#   Member: {fields: {host: string, port: int}}
#   Flags:  {fields: {dark_mode: bool, max_batch: int}}
#   Order:  {go_type: "github.com/acme/app/model.Order"}

resources:
  # An exclusive lock per shard, fair and without herd effect:
  #   c := PACKAGE.New(sess); l := c.OrderLock(7); l.Lock(ctx); defer l.Unlock(ctx)
  order_lock: {kind: lock, path: "/locks/orders/{shard:int}"}

  # More kinds; uncomment (and declare the types they use) to add them.
`

// starter returns the starter spec for the package name pkg: starterSpec,
// then the example of every kind from the spec's kinds table, commented out
// (but the lock's, which the starter declares).
func starter(pkg string) []byte {
	var b strings.Builder
	b.WriteString(starterSpec)
	for _, k := range spec.Kinds {
		info, _ := k.Info()
		if strings.Contains(starterSpec, "\n  "+info.Example+"\n") {
			continue
		}
		name, value, _ := strings.Cut(info.Example, ": ")
		fmt.Fprintf(&b, "  # %-11s %s\n", name+":", value)
	}
	return []byte(strings.ReplaceAll(b.String(), "PACKAGE", pkg))
}

func (a *app) initCommand() *cobra.Command {
	var specPath, pkg string
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a commented starter spec",
		Long: `Write a starter spec: version, package, output and root settings, one lock
resource, and commented-out examples of types and of every other resource
kind. It is valid as written: zkgen generate works on it right away.

init never overwrites: if the file exists it stops with an error and leaves
the file alone. Missing parent directories are created.`,
		Example: `  zkgen init                          # ./zkgen.yaml, package coord
  zkgen init --package locks          # generated package "locks"
  zkgen init -f svc/zkgen.yaml && zkgen generate -f svc/zkgen.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !token.IsIdentifier(pkg) || pkg == "_" {
				return userErrorf("--package %q is not a valid Go package name", pkg)
			}
			specPath = filepath.Clean(specPath)
			if _, err := os.Lstat(specPath); err == nil {
				return errExists(specPath)
			}
			data := starter(pkg)
			// The spec package is the judge of what a valid package name is.
			if _, err := spec.Parse(specPath, data); err != nil {
				return userErrorf("--package %q: the starter spec would not be valid:\n%v", pkg, err)
			}
			if err := writeNew(specPath, data); err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, initHint(specPath))
			return nil
		},
	}
	cmd.Flags().StringVarP(&specPath, "file", "f", defaultSpec, "spec file to create")
	cmd.Flags().StringVar(&pkg, "package", "coord", "Go package name for the generated code")
	return cmd
}

// errExists is init's error for a spec file that is already there.
func errExists(path string) error {
	return userErrorf("%s already exists; not overwriting it (remove it first, or name another file with -f)", path)
}

// writeNew creates path with data, failing if path already exists. A
// partially written file is removed.
func writeNew(path string, data []byte) error {
	if _, err := mkdirAll(filepath.Dir(path)); err != nil {
		return internalErrorf("create directory for %s: %v", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return errExists(path)
	}
	if err != nil {
		return internalErrorf("%v", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return internalErrorf("write %s: %v", path, err)
	}
	return nil
}

// initHint is printed after a successful init.
func initHint(path string) string {
	next := "zkgen generate"
	if path != defaultSpec {
		next += " -f " + path
	}
	return fmt.Sprintf("wrote %s; edit it, then run '%s'", path, next)
}
