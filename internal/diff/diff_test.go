package diff

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// lcsLen is the length of a longest common subsequence, by dynamic
// programming: the reference that a shortest edit script must agree with.
func lcsLen(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// checkScript verifies that script turns a into b and is a shortest one.
func checkScript(t *testing.T, a, b []string, script []edit) {
	t.Helper()
	var gotA, gotB []string
	edits := 0
	i, j := 0, 0
	for _, e := range script {
		if e.a != i || e.b != j {
			t.Fatalf("edit %+v at position (%d, %d)", e, i, j)
		}
		switch e.op {
		case opEqual:
			if a[i] != b[j] {
				t.Fatalf("equal edit pairs different lines %q and %q", a[i], b[j])
			}
			gotA, gotB = append(gotA, a[i]), append(gotB, b[j])
			i++
			j++
		case opDelete:
			gotA = append(gotA, a[i])
			i++
			edits++
		case opInsert:
			gotB = append(gotB, b[j])
			j++
			edits++
		}
	}
	if strings.Join(gotA, "") != strings.Join(a, "") || strings.Join(gotB, "") != strings.Join(b, "") {
		t.Fatalf("script does not cover both texts: a=%q b=%q script=%+v", a, b, script)
	}
	if want := len(a) + len(b) - 2*lcsLen(a, b); edits != want {
		t.Fatalf("script has %d edits, shortest has %d: a=%q b=%q", edits, want, a, b)
	}
}

func TestLinesShortestRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabets := []string{"ab", "abc", "abcdefgh"}
	for n := 0; n < 3000; n++ {
		alpha := alphabets[n%len(alphabets)]
		gen := func() []string {
			s := make([]string, r.IntN(14))
			for i := range s {
				s[i] = string(alpha[r.IntN(len(alpha))])
			}
			return s
		}
		a, b := gen(), gen()
		checkScript(t, a, b, lines(a, b))
	}
}

func TestLinesLarge(t *testing.T) {
	// A large file with scattered edits: the script must still be shortest.
	r := rand.New(rand.NewPCG(3, 4))
	var a []string
	for i := 0; i < 3000; i++ {
		a = append(a, strings.Repeat("x", r.IntN(5))+"\n")
	}
	b := append([]string(nil), a...)
	for k := 0; k < 40; k++ {
		i := r.IntN(len(b))
		switch k % 3 {
		case 0:
			b = append(b[:i], b[i+1:]...)
		case 1:
			b = append(b[:i], append([]string{"new\n"}, b[i:]...)...)
		default:
			b[i] = "changed\n"
		}
	}
	checkScript(t, a, b, lines(a, b))
}

func TestUnifiedDisjointLarge(t *testing.T) {
	// Two large texts with nothing in common: the worst case must stay
	// fast and linear in memory.
	var a, b strings.Builder
	for i := 0; i < 4000; i++ {
		a.WriteString("a" + strconv.Itoa(i) + "\n")
		b.WriteString("b" + strconv.Itoa(i) + "\n")
	}
	u := Unified("a/f", "b/f", []byte(a.String()), []byte(b.String()), 3)
	if want := "--- a/f\n+++ b/f\n@@ -1,4000 +1,4000 @@\n"; !strings.HasPrefix(u, want) {
		t.Fatalf("got prefix %q, want %q", u[:len(want)], want)
	}
	if got := strings.Count(u, "\n"); got != 3+8000 {
		t.Fatalf("got %d lines, want %d", got, 3+8000)
	}
}

func TestUnifiedEqual(t *testing.T) {
	for _, s := range []string{"", "a\n", "a\nb", "a\nb\nc\n"} {
		if got := Unified("a/x", "b/x", []byte(s), []byte(s), 3); got != "" {
			t.Errorf("Unified(%q, %q) = %q, want empty", s, s, got)
		}
	}
}

func TestUnified(t *testing.T) {
	numbered := func(from, to int, change map[int]string) string {
		var sb strings.Builder
		for i := from; i <= to; i++ {
			if c, ok := change[i]; ok {
				if c != "" {
					sb.WriteString(c + "\n")
				}
				continue
			}
			sb.WriteString("l" + strconv.Itoa(i) + "\n")
		}
		return sb.String()
	}
	tests := []struct {
		name     string
		old, new string
		context  int
		want     string
	}{
		{
			name: "new file",
			old:  "",
			new:  "a\nb\n",
			want: "--- a/f\n+++ b/f\n@@ -0,0 +1,2 @@\n+a\n+b\n",
		},
		{
			name: "deleted content",
			old:  "a\n",
			new:  "",
			want: "--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-a\n",
		},
		{
			name: "one changed line in the middle",
			old:  numbered(1, 10, nil),
			new:  numbered(1, 10, map[int]string{5: "five"}),
			want: "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n l2\n l3\n l4\n-l5\n+five\n l6\n l7\n l8\n",
		},
		{
			name:    "context 0",
			old:     numbered(1, 10, nil),
			new:     numbered(1, 10, map[int]string{5: "five"}),
			context: -1, // treated as 0
			want:    "--- a/f\n+++ b/f\n@@ -5 +5 @@\n-l5\n+five\n",
		},
		{
			name: "changes 6 lines apart share a hunk",
			old:  numbered(1, 20, nil),
			new:  numbered(1, 20, map[int]string{5: "", 12: "twelve"}),
			want: "--- a/f\n+++ b/f\n@@ -2,14 +2,13 @@\n l2\n l3\n l4\n-l5\n l6\n l7\n l8\n l9\n l10\n l11\n-l12\n+twelve\n l13\n l14\n l15\n",
		},
		{
			name: "changes 7 lines apart get two hunks",
			old:  numbered(1, 20, nil),
			new:  numbered(1, 20, map[int]string{2: "two", 10: "ten"}),
			want: "--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n l1\n-l2\n+two\n l3\n l4\n l5\n@@ -7,7 +7,7 @@\n l7\n l8\n l9\n-l10\n+ten\n l11\n l12\n l13\n",
		},
		{
			name: "insertion at the end",
			old:  "a\nb\nc\nd\ne\n",
			new:  "a\nb\nc\nd\ne\nf\n",
			want: "--- a/f\n+++ b/f\n@@ -3,3 +3,4 @@\n c\n d\n e\n+f\n",
		},
		{
			name: "insertion at the top",
			old:  "b\nc\nd\ne\n",
			new:  "a\nb\nc\nd\ne\n",
			want: "--- a/f\n+++ b/f\n@@ -1,3 +1,4 @@\n+a\n b\n c\n d\n",
		},
		{
			name: "missing final newline",
			old:  "a\nb",
			new:  "a\nb\n",
			want: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.context
			if ctx == 0 {
				ctx = 3
			}
			got := Unified("a/f", "b/f", []byte(tt.old), []byte(tt.new), ctx)
			if got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestUnifiedApplies checks random diffs by applying them back: the hunks
// of Unified(old, new) turn old into new.
func TestUnifiedApplies(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for n := 0; n < 500; n++ {
		gen := func() string {
			var sb strings.Builder
			for i := r.IntN(30); i > 0; i-- {
				sb.WriteString(string("abcde"[r.IntN(5)]) + "\n")
			}
			return sb.String()
		}
		old, new := gen(), gen()
		u := Unified("a/f", "b/f", []byte(old), []byte(new), r.IntN(4))
		if got := apply(t, old, u); got != new {
			t.Fatalf("applying\n%s\nto %q gave %q, want %q", u, old, got, new)
		}
	}
}

// apply is a minimal patch(1) for the output of Unified, for the tests.
func apply(t *testing.T, old, u string) string {
	t.Helper()
	if u == "" {
		return old
	}
	src := splitLines(old)
	var out []string
	next := 0 // next line of src to copy
	ls := splitLines(u)[2:]
	for i := 0; i < len(ls); {
		h := strings.TrimSuffix(ls[i], "\n")
		parseRange := func(s string) (int, int) {
			start, count, ok := strings.Cut(s, ",")
			if !ok {
				return atoi(t, start), 1
			}
			return atoi(t, start), atoi(t, count)
		}
		f := strings.Fields(h)
		if len(f) != 4 || f[0] != "@@" || f[3] != "@@" {
			t.Fatalf("bad hunk header %q", h)
		}
		aStart, aCount := parseRange(f[1][1:])
		_, bCount := parseRange(f[2][1:])
		first := aStart - 1
		if aCount == 0 {
			first = aStart
		}
		out = append(out, src[next:first]...)
		next = first
		i++
		for ; i < len(ls) && !strings.HasPrefix(ls[i], "@@"); i++ {
			line := ls[i][1:]
			switch ls[i][0] {
			case ' ':
				out = append(out, src[next])
				next++
				bCount--
			case '-':
				next++
			case '+':
				out = append(out, line)
				bCount--
			default:
				t.Fatalf("bad diff line %q", ls[i])
			}
		}
		if bCount != 0 {
			t.Fatalf("hunk %q: new line count off by %d", h, bCount)
		}
	}
	out = append(out, src[next:]...)
	return strings.Join(out, "")
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
