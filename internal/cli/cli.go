// Package cli is the zkgen command line: the cobra commands behind
// cmd/zkgen, callable in-process through Run so that tests (and the golden
// corpus) drive exactly what users run.
//
// Every command reads one spec file (-f, default zkgen.yaml), and the pipeline
// is always the same: spec.Parse, then templates.Generate, then the command's
// own step: generate writes the files, diff compares them with the disk,
// validate discards them.
package cli

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkgen/zkgen/spec"
	"github.com/zkgen/zkgen/templates"
)

// Exit codes returned by Run.
const (
	ExitOK       = 0 // success
	ExitFailure  = 1 // the user's to fix: a spec error, a missing spec, bad usage, stale output (diff)
	ExitInternal = 2 // not the user's to fix: an I/O failure while writing, or a bug in zkgen
)

// Version is the version "zkgen version" prints. It is empty unless set at
// link time:
//
//	go build -ldflags "-X github.com/zkgen/zkgen/internal/cli.Version=v1.2.3" ./cmd/zkgen
//
// When empty, the main module version from the build information is used
// (set by "go install ...@version"), and "(devel)" when there is none.
var Version string

// defaultSpec is the spec file every command reads when -f is not given.
const defaultSpec = "zkgen.yaml"

// Run runs the zkgen command line with args (without the program name),
// writing normal output to stdout and errors to stderr, and returns the exit
// code (ExitOK, ExitFailure or ExitInternal). It builds a fresh command tree
// on every call and keeps no state between calls.
func Run(args []string, stdout, stderr io.Writer) int {
	return run(args, stdout, stderr, templates.Generate)
}

// generateFunc is the signature of templates.Generate; tests substitute it.
type generateFunc func(*spec.Spec) (map[string][]byte, error)

// app is the state one Run shares between its commands.
type app struct {
	stdout, stderr io.Writer
	generate       generateFunc
}

func run(args []string, stdout, stderr io.Writer, generate generateFunc) int {
	a := &app{stdout: stdout, stderr: stderr, generate: generate}
	root := a.rootCommand()
	if args == nil {
		args = []string{} // cobra falls back to os.Args on nil
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	if err == nil {
		return ExitOK
	}
	return a.report(cmd, err)
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "zkgen",
		Short: "Generate typed Go handles for ZooKeeper coordination from a YAML spec",
		Long: `zkgen reads a YAML spec of ZooKeeper coordination resources (locks,
read-write locks, semaphores, queues, barriers, two-phase commits, elections,
groups, config nodes and counters) and generates a Go package with one typed,
compile-checked handle per resource, over the zkgen runtime that implements
the ZooKeeper recipes.

Every command reads the spec named by -f (default zkgen.yaml in the current
directory). Generated paths are relative to the directory of the spec file.

Exit status: 0 on success, 1 for problems to fix on your side (spec errors,
a missing spec, bad usage, stale generated files for diff, breaking changes
for breaking, a failed check for doctor), 2 for I/O
failures while writing and internal errors.`,
		Example: `  zkgen init                      # write a starter zkgen.yaml
  zkgen validate                  # check zkgen.yaml, print every error
  zkgen generate -v               # write the generated Go files
  zkgen diff -f svc/zkgen.yaml    # in CI: fail when svc's generated code is stale
  zkgen breaking --against git:origin/main  # in CI: fail on changes a rolling deploy cannot take
  zkgen doctor --servers zk1:2181  # check that the servers allow what the spec needs`,
		Version:       versionString(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetVersionTemplate("zkgen {{.Version}}\n")
	// Only --version: -v is generate's --verbose.
	root.Flags().Bool("version", false, "print the zkgen version")
	root.AddCommand(
		a.generateCommand(),
		a.validateCommand(),
		a.diffCommand(),
		a.breakingCommand(),
		a.initCommand(),
		a.graphCommand(),
		a.inspectCommand(),
		a.serveCommand(),
		a.reapCommand(),
		a.provisionCommand(),
		a.doctorCommand(),
		a.schemaCommand(),
		a.simCommand(),
		a.versionCommand(),
	)
	return root
}

// failure is an error that decides its own exit code and message.
type failure struct {
	code  int
	msg   string // printed as is, one line per problem; empty prints nothing
	cause error  // what it reports, for errors.Is; may be nil
}

func (f *failure) Error() string { return f.msg }

func (f *failure) Unwrap() error { return f.cause }

// userErrorf is an ExitFailure error printed as "zkgen: <message>".
func userErrorf(format string, args ...any) error {
	return &failure{code: ExitFailure, msg: "zkgen: " + fmt.Sprintf(format, args...)}
}

// internalErrorf is an ExitInternal error printed as "zkgen: <message>".
func internalErrorf(format string, args ...any) error {
	return &failure{code: ExitInternal, msg: "zkgen: " + fmt.Sprintf(format, args...)}
}

// specFailure is an ExitFailure error printing the spec's errors, one per
// line, exactly as spec.Errors formats them.
func specFailure(es spec.Errors) error {
	return &failure{code: ExitFailure, msg: es.Error()}
}

// report prints err and returns its exit code. Errors that are not failures
// come from cobra (unknown command or flag, bad arguments): they get a usage
// hint for the command that failed.
func (a *app) report(cmd *cobra.Command, err error) int {
	var f *failure
	if errors.As(err, &f) {
		if f.msg != "" {
			fmt.Fprintln(a.stderr, f.msg)
		}
		return f.code
	}
	fmt.Fprintf(a.stderr, "zkgen: %s\n", strings.TrimSpace(err.Error()))
	path := "zkgen"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", path)
	return ExitFailure
}

// versionString is Version, else the main module version, else "(devel)".
func versionString() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the zkgen version",
		Long: `Print the version of this zkgen binary as "zkgen <version>".

The version is the module version zkgen was installed at (go install
github.com/zkgen/zkgen/cmd/zkgen@v1.2.3 reports v1.2.3), "(devel)" for a
build from a source tree, or whatever the build set with
-ldflags "-X github.com/zkgen/zkgen/internal/cli.Version=...".`,
		Example: `  zkgen version`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := fmt.Fprintf(a.stdout, "zkgen %s\n", versionString()); err != nil {
				return internalErrorf("%v", err)
			}
			return nil
		},
	}
}
