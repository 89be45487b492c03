package golden

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/zkgen/zkgen/spec"
)

// The shipped JSON Schema accepts every spec zkgen accepts (the golden good
// cases and the example), and refuses the bad specs that a schema can tell
// apart.
func TestSchema(t *testing.T) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(spec.SchemaJSON))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("zkgen.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("zkgen.schema.json")
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	load := func(path string) any {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
		if err != nil {
			t.Fatal(err)
		}
		return inst
	}

	good := []string{filepath.Join("..", "generated_example", specFile)}
	for _, dir := range caseDirs(t) {
		if _, err := os.Stat(filepath.Join(dir, stderrFile)); err != nil {
			good = append(good, filepath.Join(dir, specFile))
		}
	}
	for _, p := range good {
		if err := sch.Validate(load(p)); err != nil {
			t.Errorf("%s: the schema refuses a spec zkgen accepts:\n%v", p, err)
		}
	}
	// Bad specs whose fault is within a schema's reach.
	for _, name := range []string{
		"version_unknown", "package_missing", "top_key_unknown", "resource_key_unknown", "kind_unknown",
		"kind_missing", "path_missing", "path_relative", "path_trailing_slash", "leases_zero", "leases_missing",
		"size_zero", "size_negative", "priorities_duplicate", "priorities_101", "participants_duplicate",
		"field_wrong_kind", "layout_unknown", "duration_bad", "revocable_bad_value", "output_not_go_file",
		"acl_unknown", "acl_digest_bad_perms", "name_not_snake_case", "dead_letter_at_most_once",
	} {
		p := filepath.Join(name, specFile)
		if _, err := os.Stat(p); err != nil {
			t.Errorf("no bad case %s", name)
			continue
		}
		if err := sch.Validate(load(p)); err == nil {
			t.Errorf("%s: the schema accepts a spec zkgen refuses", name)
		} else if strings.TrimSpace(err.Error()) == "" {
			t.Errorf("%s: empty schema error", name)
		}
	}
}
