package cli

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// oldSpec is the old version the breaking tests change.
const oldSpec = `version: 1
package: coord
root: /app
resources:
  order_lock: {kind: lock, path: "/locks/orders/{shard:int}"}
  slots: {kind: semaphore, path: /semaphores/slots, leases: 3}
  jobs: {kind: queue, path: /queues/jobs, item: string}
`

// newSpec changes oldSpec: the lock's layout and the semaphore's leases
// break, the jobs queue is removed, a doc and a resource are added.
const newSpec = `version: 1
package: coord
root: /app
resources:
  order_lock: {kind: lock, path: "/locks/orders/{shard:int}", layout: kazoo}
  slots: {kind: semaphore, path: /semaphores/slots, leases: 5, doc: "More slots."}
  hits: {kind: counter, path: /counters/hits}
`

// newFindings is what breaking prints for oldSpec (old.yaml) against
// newSpec (zkgen.yaml).
const newFindings = `zkgen.yaml:5:71: resources.order_lock.layout: breaking: layout changed from curator (old default) to kazoo: old and new processes would name their lock nodes differently and not see each other's
zkgen.yaml:6:61: resources.slots.leases: breaking: leases changed from 3 (old line 6) to 5: old and new processes would admit different numbers of holders at once
zkgen.yaml: resources.jobs: warning: removed (old line 7)
`

const breakingSummary = `zkgen: 2 breaking changes against old.yaml: old and new processes running together would not coordinate (see zkgen's docs/deploy-safety.md)`

func TestBreaking(t *testing.T) {
	chdirTemp(t)
	writeFile(t, "old.yaml", oldSpec)
	writeFile(t, "zkgen.yaml", newSpec)
	zkgen(t, "breaking", "--against", "old.yaml").want(t, ExitFailure, str(newFindings), str(breakingSummary+"\n"))
	zkgen(t, "breaking", "--against=old.yaml", "-f", "zkgen.yaml", "--strict").want(t, ExitFailure,
		str(strings.Replace(newFindings, "warning:", "error:", 1)), str(breakingSummary+"; 1 removed resource (--strict)\n"))

	// Nothing changed: nothing printed.
	zkgen(t, "breaking", "--against", "zkgen.yaml").want(t, ExitOK, empty, empty)
	// Only safe changes: the same.
	writeFile(t, "safe.yaml", strings.Replace(oldSpec, "leases: 3}", "leases: 3, doc: \"Slots.\"}\n  more: {kind: barrier, path: /b}", 1))
	zkgen(t, "breaking", "--against", "old.yaml", "-f", "safe.yaml").want(t, ExitOK, empty, empty)
}

func TestBreakingRemovedIsAWarning(t *testing.T) {
	chdirTemp(t)
	writeFile(t, "old.yaml", oldSpec)
	writeFile(t, "zkgen.yaml", strings.Replace(oldSpec, "  jobs: {kind: queue, path: /queues/jobs, item: string}\n", "", 1))
	zkgen(t, "breaking", "--against", "old.yaml").want(t, ExitOK, str("zkgen.yaml: resources.jobs: warning: removed (old line 7)\n"), empty)
	zkgen(t, "breaking", "--against", "old.yaml", "--strict").want(t, ExitFailure,
		str("zkgen.yaml: resources.jobs: error: removed (old line 7)\n"), str("zkgen: 1 removed resource (--strict) against old.yaml\n"))
}

func TestBreakingJSON(t *testing.T) {
	chdirTemp(t)
	writeFile(t, "old.yaml", oldSpec)
	writeFile(t, "zkgen.yaml", newSpec)
	r := zkgen(t, "breaking", "--against", "old.yaml", "--json")
	r.want(t, ExitFailure, nil, str(breakingSummary+"\n"))
	type finding struct {
		File     string `json:"file"`
		Line     int    `json:"line"`
		Col      int    `json:"col"`
		Path     string `json:"path"`
		Severity string `json:"severity"`
		Message  string `json:"message"`
		Old      string `json:"old"`
		New      string `json:"new"`
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	var got []finding
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("%v:\n%s", err, r.stdout)
	}
	want := []finding{
		{"zkgen.yaml", 5, 71, "resources.order_lock.layout", "breaking", "", "curator", "kazoo"},
		{"zkgen.yaml", 6, 61, "resources.slots.leases", "breaking", "", "3", "5"},
		{"zkgen.yaml", 0, 0, "resources.jobs", "warning", "removed (old line 7)", "queue /queues/jobs", ""},
	}
	lines := strings.Split(newFindings, "\n")
	for i := range 2 {
		want[i].Message = lines[i][strings.Index(lines[i], "breaking: ")+len("breaking: "):]
	}
	if len(got) != len(want) {
		t.Fatalf("got %d findings, want %d:\n%s", len(got), len(want), r.stdout)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("finding %d:\n%+v\nwant\n%+v", i, got[i], want[i])
		}
	}
	// No findings: an empty array, for machines.
	zkgen(t, "breaking", "--against", "old.yaml", "-f", "old.yaml", "--json").want(t, ExitOK, str("[]\n"), empty)
}

func TestBreakingBrokenSpecs(t *testing.T) {
	chdirTemp(t)
	writeFile(t, "old.yaml", oldSpec)
	writeFile(t, "zkgen.yaml", newSpec)
	writeFile(t, "bad.yaml", badSpec)
	oldErrs := specErrors(t, "bad.yaml", badSpec)
	zkgen(t, "breaking", "--against", "bad.yaml").want(t, ExitFailure, empty, str(oldErrs))
	newErrs := specErrors(t, "bad.yaml", badSpec)
	zkgen(t, "breaking", "--against", "old.yaml", "-f", "bad.yaml").want(t, ExitFailure, empty, str(newErrs))
	writeFile(t, "bad2.yaml", badSpec)
	zkgen(t, "breaking", "--against", "bad.yaml", "-f", "bad2.yaml").want(t, ExitFailure, empty,
		str(oldErrs+specErrors(t, "bad2.yaml", badSpec)))

	zkgen(t, "breaking", "--against", "missing.yaml").want(t, ExitFailure, empty, str("zkgen: --against missing.yaml: file not found\n"))
	zkgen(t, "breaking", "--against", "old.yaml", "-f", "missing.yaml").want(t, ExitFailure, empty,
		str("zkgen: spec file missing.yaml not found (run 'zkgen init' to create one, or name another with -f)\n"))
	zkgen(t, "breaking").want(t, ExitFailure, empty, str("zkgen: required flag(s) \"against\" not set\nRun 'zkgen breaking --help' for usage.\n"))
	zkgen(t, "breaking", "--against", "").want(t, ExitFailure, empty, str("zkgen: --against needs a spec file or git:REF\n"))
}

// gitRepo makes dir a git repository of its own, isolated from the user's
// and the system's git configuration, and returns a function running git
// there.
func gitRepo(t *testing.T, dir string) func(args ...string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(dir, "no-such-gitconfig"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=zkgen", "-c", "user.email=zkgen@example.com", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("init", "-q")
	return run
}

func TestBreakingGit(t *testing.T) {
	dir := chdirTemp(t)
	git := gitRepo(t, dir)
	svc := filepath.Join("svc", "zkgen.yaml")
	writeFile(t, svc, oldSpec)
	git("add", ".")
	git("commit", "-q", "-m", "old")
	git("tag", "v1")
	writeFile(t, svc, newSpec)

	// The spec's path relative to the repository root, from the root and
	// from inside the spec's directory.
	want := strings.ReplaceAll(newFindings, "zkgen.yaml", svc)
	summary := strings.Replace(breakingSummary, "against old.yaml", "against git:HEAD", 1) + "\n"
	zkgen(t, "breaking", "--against", "git:HEAD", "-f", svc).want(t, ExitFailure, str(want), str(summary))
	t.Chdir("svc")
	zkgen(t, "breaking", "--against", "git:HEAD").want(t, ExitFailure, str(newFindings), str(summary))
	zkgen(t, "breaking", "--against", "git:v1", "-f", "../svc/zkgen.yaml").want(t, ExitFailure,
		str(strings.ReplaceAll(newFindings, "zkgen.yaml", filepath.Join("..", "svc", "zkgen.yaml"))),
		str(strings.Replace(summary, "git:HEAD", "git:v1", 1)))

	// Committed: nothing changed against HEAD, but against v1.
	git("commit", "-q", "-am", "new")
	zkgen(t, "breaking", "--against", "git:HEAD").want(t, ExitOK, empty, empty)
	zkgen(t, "breaking", "--against", "git:HEAD~1").want(t, ExitFailure, str(newFindings), nil)

	// A broken old version names the ref and the path.
	writeFile(t, "zkgen.yaml", badSpec)
	git("commit", "-q", "-am", "broken")
	writeFile(t, "zkgen.yaml", newSpec)
	zkgen(t, "breaking", "--against", "git:HEAD").want(t, ExitFailure, empty, str(specErrors(t, "HEAD:svc/zkgen.yaml", badSpec)))

	// Refs and paths that are not there.
	zkgen(t, "breaking", "--against", "git:nope").want(t, ExitFailure, empty,
		str("zkgen: --against git:nope: no commit, branch or tag \"nope\" in the git repository of zkgen.yaml\n"))
	writeFile(t, "other.yaml", newSpec)
	zkgen(t, "breaking", "--against", "git:HEAD", "-f", "other.yaml").want(t, ExitFailure, empty,
		str("zkgen: --against git:HEAD: svc/other.yaml does not exist at HEAD\n"))
	for _, ref := range []string{"", "-p", "HEAD:zkgen.yaml", "a b"} {
		zkgen(t, "breaking", "--against", "git:"+ref).want(t, ExitFailure, empty,
			str("zkgen: --against git:"+ref+": not a git revision; use git:REF with a commit, branch or tag, e.g. git:origin/main\n"))
	}
}

func TestBreakingGitOutsideARepository(t *testing.T) {
	dir := chdirTemp(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
	writeFile(t, "zkgen.yaml", newSpec)
	r := zkgen(t, "breaking", "--against", "git:HEAD")
	r.want(t, ExitFailure, empty, nil)
	if !strings.HasPrefix(r.stderr, "zkgen: --against git:HEAD: zkgen.yaml is not in a git repository (") {
		t.Errorf("stderr %q", r.stderr)
	}
}

func TestBreakingHelp(t *testing.T) {
	r := zkgen(t, "--help")
	if !strings.Contains(r.stdout, "\n  breaking ") {
		t.Errorf("help does not list breaking:\n%s", r.stdout)
	}
	r = zkgen(t, "breaking", "--help")
	r.want(t, ExitOK, nil, empty)
	for _, s := range []string{"Examples:\n  zkgen breaking --against git:origin/main", "--strict", "--json", "-f, --file"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("breaking --help lacks %q:\n%s", s, r.stdout)
		}
	}
}
