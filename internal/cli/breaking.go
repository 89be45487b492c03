package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkgen/zkgen/internal/breaking"
	"github.com/zkgen/zkgen/spec"
)

// gitPrefix marks an --against value naming the spec at a git ref.
const gitPrefix = "git:"

func (a *app) breakingCommand() *cobra.Command {
	var specPath, against string
	var strict, asJSON bool
	cmd := &cobra.Command{
		Use:   "breaking --against OLD",
		Short: "Report spec changes that would split coordination during a rolling deploy",
		Long: `Compare the spec with an older version of it and report every change that
would split coordination between a process generated from the old version
and one generated from the new version, as they run side by side during a
rolling deploy: a changed root, path, kind or lock layout, a semaphore's
leases, a double barrier's size, a queue's delivery or priorities, a two-phase
commit's participants or notify mode, a payload type that old data would not
decode as, a narrowed ACL. Adding resources, docs, Go names, payload fields
and changing force_after are safe.

OLD is a spec file, or git:REF for the same spec file at a git commit, branch
or tag (git show REF:path, run in the spec's directory, with the spec's path
relative to the repository root).

Resources are matched by name: a renamed resource is a removed one plus a new
one. Prints nothing and exits 0 when nothing breaks. Otherwise prints every
finding, sorted by position in the new spec, one per line as
file:line:col: resources.NAME.FIELD: breaking: message (with the old value and
its line), and exits 1. A removed resource is a warning,
file: resources.NAME: warning: removed (old line N), printed after the others;
it exits 0 unless --strict makes it an error. --json prints the findings as a
JSON array of {file, line, col, path, severity, message, old, new} instead
([] when there are none). A spec with errors, old or new, is reported with
its errors and exits 1.

zkgen's docs/deploy-safety.md lists the rules and the two-step migration
for a breaking change.`,
		Example: `  zkgen breaking --against git:origin/main          # in CI, before merging
  zkgen breaking --against git:v1.4.0 -f svc/zkgen.yaml --strict
  zkgen breaking --against old/zkgen.yaml --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			findings, err := compareSpecs(filepath.Clean(specPath), against)
			if err != nil {
				return err
			}
			return a.printFindings(findings, against, strict, asJSON)
		},
	}
	cmd.Flags().StringVarP(&specPath, "file", "f", defaultSpec, "spec file to read (the new version)")
	cmd.Flags().StringVar(&against, "against", "", "the old version: a spec file, or git:REF for the spec file at a git ref")
	cmd.Flags().BoolVar(&strict, "strict", false, "make warnings (removed resources) errors that exit 1")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the findings as a JSON array")
	_ = cmd.MarkFlagRequired("against") // the flag exists
	return cmd
}

// compareSpecs reads both versions and compares them. Spec errors of
// either are reported together, the old version's first.
func compareSpecs(specPath, against string) ([]breaking.Finding, error) {
	newData, err := readSpec(specPath)
	if err != nil {
		return nil, err
	}
	oldName, oldData, err := readAgainst(against, specPath)
	if err != nil {
		return nil, err
	}
	old, oldErr := breaking.Parse(oldName, oldData)
	cur, newErr := breaking.Parse(specPath, newData)
	var es spec.Errors
	for _, err := range []error{oldErr, newErr} {
		var e spec.Errors
		switch {
		case err == nil:
		case errors.As(err, &e):
			es = append(es, e...)
		default:
			return nil, internalErrorf("parse: %v", err)
		}
	}
	if len(es) > 0 {
		return nil, specFailure(es)
	}
	return breaking.Compare(old, cur), nil
}

// readAgainst reads the old version named by --against: a file, or
// git:REF. name is what its errors call it: the path as given, or REF:path.
func readAgainst(against, specPath string) (name string, data []byte, err error) {
	if ref, ok := strings.CutPrefix(against, gitPrefix); ok {
		return gitSpec(ref, specPath)
	}
	if against == "" {
		return "", nil, userErrorf("--against needs a spec file or git:REF")
	}
	name = filepath.Clean(against)
	data, err = os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, userErrorf("--against %s: file not found", against)
	}
	if err != nil {
		return "", nil, userErrorf("--against %s: %v", against, err)
	}
	return name, data, nil
}

// gitSpec reads the spec at specPath as it is at the git ref: git show
// REF:path, run in the spec's directory, path relative to the root of its
// repository.
func gitSpec(ref, specPath string) (name string, data []byte, err error) {
	fail := func(format string, args ...any) error {
		return userErrorf("--against %s%s: %s", gitPrefix, ref, fmt.Sprintf(format, args...))
	}
	if ref == "" || strings.HasPrefix(ref, "-") || strings.ContainsAny(ref, ": \t\n") {
		return "", nil, fail("not a git revision; use git:REF with a commit, branch or tag, e.g. git:origin/main")
	}
	dir := filepath.Dir(specPath)
	prefix, err := git(dir, "rev-parse", "--show-prefix")
	if errors.Is(err, exec.ErrNotFound) {
		return "", nil, fail("git is not installed: %v", err)
	}
	if err != nil {
		return "", nil, fail("%s is not in a git repository (%v)", specPath, err)
	}
	rel := path.Join(strings.TrimSpace(string(prefix)), filepath.Base(specPath))
	if _, err := git(dir, "rev-parse", "--verify", "--quiet", ref+"^{commit}"); err != nil {
		return "", nil, fail("no commit, branch or tag %q in the git repository of %s", ref, specPath)
	}
	if typ, err := git(dir, "cat-file", "-t", ref+":"+rel); err != nil || strings.TrimSpace(string(typ)) != "blob" {
		return "", nil, fail("%s does not exist at %s", rel, ref)
	}
	data, err = git(dir, "show", ref+":"+rel)
	if err != nil {
		return "", nil, fail("git show %s:%s: %v", ref, rel, err)
	}
	return ref + ":" + rel, data, nil
}

// git runs git in dir and returns its output; the error carries the first
// line of what git printed on stderr, when it printed anything.
func git(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n"); msg != "" && !errors.Is(err, exec.ErrNotFound) {
			return nil, errors.New(msg)
		}
		return nil, err
	}
	return out, nil
}

// printFindings prints the findings, as text or JSON, and returns an
// ExitFailure error with a summary when any breaks (or, with strict, when
// any is a warning, which it prints as an error).
func (a *app) printFindings(findings []breaking.Finding, against string, strict, asJSON bool) error {
	var breaks, errs int
	for i := range findings {
		switch f := &findings[i]; {
		case f.Severity == breaking.Breaking:
			breaks++
		case f.Severity == breaking.Warning && strict:
			f.Severity = breaking.Error
			errs++
		}
	}
	var out bytes.Buffer
	if asJSON {
		data, err := json.MarshalIndent(append([]breaking.Finding{}, findings...), "", "  ")
		if err != nil {
			return internalErrorf("encode findings: %v", err)
		}
		out.Write(append(data, '\n'))
	} else {
		for _, f := range findings {
			fmt.Fprintln(&out, f)
		}
	}
	if _, err := a.stdout.Write(out.Bytes()); err != nil {
		return internalErrorf("write findings: %v", err)
	}
	removed := ""
	if errs > 0 {
		removed = plural(errs, "removed resource", "removed resources") + " (--strict)"
	}
	switch {
	case breaks > 0 && errs > 0:
		removed = "; " + removed
	case breaks == 0 && errs == 0:
		return nil
	case breaks == 0:
		return userErrorf("%s against %s", removed, against)
	}
	return userErrorf("%s against %s: old and new processes running together would not coordinate "+
		"(see zkgen's docs/deploy-safety.md)%s", plural(breaks, "breaking change", "breaking changes"), against, removed)
}

// plural is "1 <one>" or "<n> <many>".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
