package golden

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/zkgen/zkgen/internal/breaking"
	"github.com/zkgen/zkgen/internal/inspect"
	"github.com/zkgen/zkgen/spec"
	"github.com/zkgen/zkgen/templates"
)

// TestKindCoverage fails for every kind of the spec's kinds table that a
// part of zkgen does not handle: a valid example for zkgen init, code
// generation (a templates descriptor), the JSON Schema (a resource_<kind>
// definition with the table's fields), zkgen inspect (a reader), zkgen
// graph (the row's Settings), zkgen serve (watch rules), zkgen provision (a provisioning rule,
// possibly "nothing"), zkgen breaking (a rule for each of its fields, or a
// rule saying it has none), a golden case that generates it and a section
// of docs/ headed with `kind: <kind>`.
func TestKindCoverage(t *testing.T) {
	generated := templates.Supported()
	schema := loadSchema(t)
	golden := goldenKinds(t)
	readme := readmeHeadings(t)
	for _, k := range spec.Kinds {
		info, ok := k.Info()
		if !ok {
			t.Errorf("kind %s: listed in spec.Kinds but has no row", k)
			continue
		}
		if problem := exampleProblem(info); problem != "" {
			t.Errorf("kind %s: the table's example (zkgen init shows it): %s", k, problem)
		}
		if !slices.Contains(generated, k) {
			t.Errorf("kind %s: no code generation (register a descriptor in templates/)", k)
		}
		for _, problem := range schema.check(info) {
			t.Errorf("kind %s: schema (spec/zkgen.schema.json): %s", k, problem)
		}
		inspects, provisions := inspect.Supported(k)
		if !inspects {
			t.Errorf("kind %s: zkgen inspect cannot read it (register a reader in internal/inspect/)", k)
		}
		if !inspect.Watched(k) {
			t.Errorf("kind %s: zkgen serve does not know what to watch (the kind's watch rules in internal/inspect/)", k)
		}
		if !provisions {
			t.Errorf("kind %s: zkgen provision has no rule for it (internal/inspect/; provisionNothing if it needs none)", k)
		}
		if info.Settings == nil {
			t.Errorf("kind %s: zkgen graph has nothing to draw (the row's Settings in spec/kinds.go is nil)", k)
		}
		for _, problem := range breakingProblems(info) {
			t.Errorf("kind %s: zkgen breaking (the rules table in internal/breaking/rules.go): %s", k, problem)
		}
		if !golden[k] {
			t.Errorf("kind %s: no golden case generates it (add one under golden/)", k)
		}
		if !slices.ContainsFunc(readme, func(h string) bool { return strings.Contains(h, "`kind: "+string(k)+"`") }) {
			t.Errorf("kind %s: no page of docs/ has a section headed with `kind: %s`", k, k)
		}
	}
}

// exampleProblem says what is wrong with the example of row, or "": it
// must be a valid resource of the row's kind, given the starter spec's
// commented types.
func exampleProblem(row spec.KindInfo) string {
	src := "version: 1\npackage: p\ntypes:\n" +
		"  Job: {fields: {name: string}}\n  Member: {fields: {host: string}}\n  Flags: {fields: {on: bool}}\n" +
		"resources:\n  " + row.Example + "\n"
	s, err := spec.Parse("example.yaml", []byte(src))
	switch {
	case err != nil:
		return err.Error()
	case len(s.Resources) != 1 || s.Resources[0].Kind != row.Kind:
		return "it does not declare one resource of the kind"
	}
	return ""
}

// breakingProblems lists what the rules table of zkgen breaking lacks for
// the kind of row: a rule for every field the kind has (the common ones and
// its own), a rule saying so when it has no fields of its own, and no rule
// for a field it does not have.
func breakingProblems(row spec.KindInfo) []string {
	var problems []string
	covered := map[string]bool{}
	for _, r := range breaking.Rules() {
		switch {
		case r.TopLevel:
		case r.Kinds == nil:
			covered[r.Field] = true
		case slices.Contains(r.Kinds, row.Kind):
			if r.Field != "" && !slices.Contains(row.Fields, r.Field) {
				problems = append(problems, "a rule for field "+r.Field+", which the kind does not have")
			}
			covered[r.Field] = true
		}
	}
	for _, f := range append([]string{"kind", "path", "doc", "acl"}, row.Fields...) {
		if !covered[f] {
			problems = append(problems, "no rule for field "+f+"; decide which changes of it split old and new processes (a rule with Safe only when none does)")
		}
	}
	if len(row.Fields) == 0 && !covered[""] {
		problems = append(problems, `no fields of its own, and no rule (Field "") saying so`)
	}
	return problems
}

// schemaDoc is the part of the JSON Schema that describes resources.
type schemaDoc struct {
	Defs map[string]schemaDef `json:"$defs"`
}

// schemaDef is one definition: a resource_<kind>, or resource.
type schemaDef struct {
	Properties map[string]schemaProp `json:"properties"`
	Required   []string              `json:"required"`
	AllOf      []schemaBranch        `json:"allOf"`
}

// schemaProp is the part of a property's schema that names kinds.
type schemaProp struct {
	Const string   `json:"const"`
	Enum  []string `json:"enum"`
}

// schemaBranch selects a resource_<kind> definition by the kind.
type schemaBranch struct {
	If struct {
		Properties struct {
			Kind schemaProp `json:"kind"`
		} `json:"properties"`
	} `json:"if"`
	Then struct {
		Ref string `json:"$ref"`
	} `json:"then"`
}

func loadSchema(t *testing.T) schemaDoc {
	t.Helper()
	var doc schemaDoc
	if err := json.Unmarshal(spec.SchemaJSON, &doc); err != nil {
		t.Fatalf("the schema: %v", err)
	}
	return doc
}

// check lists what the schema lacks for the kind of row: a definition
// resource_<kind> with exactly its fields and required fields, the kind in
// the resource's kind enum, and a branch selecting the definition.
func (doc schemaDoc) check(row spec.KindInfo) []string {
	var problems []string
	name := "resource_" + string(row.Kind)
	def, ok := doc.Defs[name]
	if !ok {
		return []string{"no $defs/" + name}
	}
	if c := def.Properties["kind"].Const; c != string(row.Kind) {
		problems = append(problems, name+".properties.kind.const is "+c)
	}
	var props []string
	for p := range def.Properties {
		props = append(props, p)
	}
	want := append([]string{"kind", "path", "doc", "acl"}, row.Fields...)
	if slices.Sort(props); !slices.Equal(props, slices.Sorted(slices.Values(want))) {
		problems = append(problems, name+" has properties "+strings.Join(props, ", ")+"; the table has "+strings.Join(want, ", "))
	}
	required := append([]string{"kind", "path"}, row.Required...)
	if !slices.Equal(slices.Sorted(slices.Values(def.Required)), slices.Sorted(slices.Values(required))) {
		problems = append(problems, name+" requires "+strings.Join(def.Required, ", ")+"; the table requires "+strings.Join(required, ", "))
	}
	res := doc.Defs["resource"]
	if !slices.Contains(res.Properties["kind"].Enum, string(row.Kind)) {
		problems = append(problems, "the kind is not in $defs/resource.properties.kind.enum")
	}
	if !slices.ContainsFunc(res.AllOf, func(b schemaBranch) bool {
		return b.If.Properties.Kind.Const == string(row.Kind) && b.Then.Ref == "#/$defs/"+name
	}) {
		problems = append(problems, "$defs/resource.allOf has no branch from the kind to #/$defs/"+name)
	}
	return problems
}

// goldenKinds returns the kinds that some good golden case declares.
func goldenKinds(t *testing.T) map[spec.Kind]bool {
	t.Helper()
	kinds := map[spec.Kind]bool{}
	for _, dir := range caseDirs(t) {
		if _, err := os.Stat(filepath.Join(dir, stderrFile)); err == nil {
			continue
		}
		s, err := spec.ParseFile(filepath.Join(dir, specFile))
		if err != nil {
			t.Fatalf("golden case %s: %v", dir, err)
		}
		for _, r := range s.Resources {
			kinds[r.Kind] = true
		}
	}
	return kinds
}

// readmeHeadings returns the Markdown headings of the docs (docs/*.md).
func readmeHeadings(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	var out []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, regexp.MustCompile(`(?m)^#+ .*$`).FindAllString(string(data), -1)...)
	}
	return out
}
