package zktest

import (
	"flag"
	"fmt"
	"strings"
	"testing"
)

// ExamplesNeedServer adds ^Example to -test.skip exactly when the examples
// could not run: ZooKeeper missing outside CI, or -short.
func TestExamplesNeedServer(t *testing.T) {
	f := flag.Lookup("test.skip")
	if f == nil {
		t.Fatal("no test.skip flag")
	}
	orig := f.Value.String()
	t.Cleanup(func() { f.Value.Set(orig) }) // the package's examples run after the tests
	missing := fmt.Errorf("%w: no java", ErrNotInstalled)
	for _, c := range []struct {
		name, ci, old string
		err           error
		skips         bool // the examples are skipped (also under -short)
	}{
		{"missing", "", "", missing, true},
		{"missing, own skip", "false", "TestSlow", missing, true},
		{"missing, own skip with a slash", "", "TestA/sub", missing, true},
		{"missing under CI", "true", "", missing, false},
		{"started", "", "", nil, false},
		{"other failure", "", "", fmt.Errorf("port clash"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("CI", c.ci)
			if err := f.Value.Set(c.old); err != nil {
				t.Fatal(err)
			}
			want := c.old
			switch {
			case !c.skips && !testing.Short():
			case c.old == "":
				want = "^Example"
			case !strings.Contains(c.old, "/"): // one with a slash cannot be combined
				want = "^Example|" + c.old
			}
			ExamplesNeedServer(c.err)
			if got := f.Value.String(); got != want {
				t.Errorf("-test.skip = %q, want %q", got, want)
			}
		})
	}
}
