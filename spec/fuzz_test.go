package spec

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that no input makes Parse panic, and that every problem
// it reports has a position in the file.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, tc := range errorCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err == nil {
			if s == nil {
				t.Fatal("nil spec and nil error")
			}
			return
		}
		errs, ok := err.(Errors)
		if !ok || len(errs) == 0 {
			t.Fatalf("error is %T %v, want non-empty Errors", err, err)
		}
		lines := newText(data).lines()
		for _, e := range errs {
			if e.Pos.Line < 1 || e.Pos.Col < 1 {
				t.Errorf("error without position: %v", e)
			}
			if e.Pos.Line > lines && !wideEncoding(data) {
				t.Errorf("error after the last line (%d): %v", lines, e)
			}
		}
	})
}
