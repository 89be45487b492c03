package spec

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf16"
)

// ok is a valid spec prefix: cases append to it.
const ok = "version: 1\npackage: p\n"

// res wraps resource lines into a valid spec.
func res(lines ...string) string {
	return ok + "resources:\n" + strings.Join(lines, "\n") + "\n"
}

// utf16LE encodes s as UTF-16, little-endian.
func utf16LE(s string) string {
	var b strings.Builder
	for _, u := range utf16.Encode([]rune(s)) {
		b.WriteByte(byte(u))
		b.WriteByte(byte(u >> 8))
	}
	return b.String()
}

// errorCases are one or more cases per validation rule. want is the exact
// text of the returned error (all problems, one per line).
var errorCases = []struct {
	name, in, want string
}{
	// YAML level
	{"syntax error at the end", ok + "resources: {a: [\n", `zkgen.yaml:4:1: invalid YAML: did not find expected node content (the file ends inside a flow collection that is never closed)`},
	{"syntax error on line 1", "version: 1: 2\n", `zkgen.yaml:1:11: invalid YAML: mapping values are not allowed in this context`},
	{"scanner error", ok + "resources:\n  a: @x\n", `zkgen.yaml:4:6: invalid YAML: found character that cannot start any token`},

	// YAML syntax errors are reported where the problem is, not where
	// yaml.v3 says (the start of the enclosing block, column unknown).
	{"key indented too little", ok + "resources:\n  a:\n    kind: lock\n   path: /a\n", `zkgen.yaml:6:4: invalid YAML: did not find expected key (in the block mapping starting on line 4)`},
	{"key indented too little, CRLF", "version: 1\r\npackage: p\r\nresources:\r\n  a:\r\n    kind: lock\r\n   path: /a\r\n", `zkgen.yaml:6:4: invalid YAML: did not find expected key (in the block mapping starting on line 4)`},
	{"list item indented too little", ok + "resources:\n  a:\n    kind: two_phase_commit\n    path: /a\n    participants:\n      - x\n     - y\n", `zkgen.yaml:9:6: invalid YAML: did not find expected key (in the block mapping starting on line 5)`},
	{"list item in a mapping", ok + "resources:\n  a:\n    kind: lock\n    - path: /a\n", `zkgen.yaml:6:5: invalid YAML: did not find expected key (in the block mapping starting on line 5)`},
	{"key in a list", ok + "resources:\n  a:\n    kind: two_phase_commit\n    path: /a\n    participants:\n      - x\n      y: z\n", `zkgen.yaml:9:7: invalid YAML: did not find expected '-' indicator (in the block sequence starting on line 8)`},
	{"token after a value", ok + "resources:\n  a: {kind: lock, path: /a} x\n", `zkgen.yaml:4:29: invalid YAML: did not find expected key`},
	{"mapping value inside a value", ok + "resources: a: b\n", `zkgen.yaml:3:13: invalid YAML: mapping values are not allowed in this context`},
	{"mapping value after a multi-line value", ok + "resources:\n  a: {kind: lock, path: /a}\n  b: c\n    d: e\n", `zkgen.yaml:6:6: invalid YAML: mapping values are not allowed in this context`},
	{"colon right after a colon", ok + "resources:\n  a: :{kind: lock}\n", `zkgen.yaml:4:12: invalid YAML: mapping values are not allowed in this context`},
	{"key without colon", ok + "resources:\n  a: {kind: lock, path: /a}\n  b\n", `zkgen.yaml:5:3: invalid YAML: could not find expected ':'`},
	{"flow mapping left open", ok + "resources:\n  a: {kind: lock, path: \"/a\"\n  b: {kind: lock, path: /b}\n", `zkgen.yaml:5:3: invalid YAML: did not find expected ',' or '}' (the flow mapping opened on line 4 is still open here)`},
	{"flow mapping left open before a plain value", ok + "resources:\n  a: {kind: lock, path: /a\n  b: {kind: lock, path: /b}\n", `zkgen.yaml:5:4: invalid YAML: did not find expected ',' or '}' (the flow mapping opened on line 4 is still open here)`},
	{"flow mapping closed with a bracket", ok + "resources:\n  a: {kind: lock, path: /a]\n", `zkgen.yaml:4:27: invalid YAML: did not find expected ',' or '}' (the flow mapping is still open here)`},
	{"flow sequence closed with a brace", ok + "resources:\n  a: {kind: two_phase_commit, path: /a, participants: [x, y}\n", `zkgen.yaml:4:60: invalid YAML: did not find expected ',' or ']' (the flow sequence is still open here)`},
	{"flow mapping never closed", ok + "resources:\n  a: {kind: lock,\n      path: /a\n", `zkgen.yaml:4:6: invalid YAML: did not find expected ',' or '}' (this flow mapping is never closed)`},
	{"empty flow entry", ok + "resources:\n  a: {kind: lock, , path: /a}\n", `zkgen.yaml:4:19: invalid YAML: did not find expected node content`},
	{"quoted string never closed", ok + "resources:\n  a: {kind: lock, path: \"/a}\n  b: {kind: lock, path: /b}\n", `zkgen.yaml:4:25: invalid YAML: found unexpected end of stream (this quoted string is never closed)`},
	{"quoted string never closed on line 1", "version: '1\n", `zkgen.yaml:1:10: invalid YAML: found unexpected end of stream (this quoted string is never closed)`},
	{"quoted string never closed, no final line break", "version: '1", `zkgen.yaml:1:10: invalid YAML: found unexpected end of stream (this quoted string is never closed)`},
	{"flow sequence never closed, no final line break", "[", `zkgen.yaml:1:2: invalid YAML: did not find expected node content (the file ends inside a flow collection that is never closed)`},
	{"document marker in a quoted string", ok + "resources: {a: {kind: lock, path: \"/a}}\n---\n", `zkgen.yaml:4:1: invalid YAML: found unexpected document indicator (inside the quoted string that starts on line 3)`},
	{"unknown escape", ok + "resources:\n  a: {kind: lock, path: \"/a\\q\"}\n", `zkgen.yaml:4:28: invalid YAML: found unknown escape character`},
	{"byte order mark", "\ufeffversion: 1: 2\n", `zkgen.yaml:1:11: invalid YAML: mapping values are not allowed in this context`},
	{"not located", ok + "resources:\n  a: {kind: lock, path: /a/{x:int}\"}\n", `zkgen.yaml:4:1: invalid YAML: did not find expected ',' or '}' (somewhere on this line)`},
	{"not located, UTF-16", "\xff\xfe" + utf16LE(ok+"resources: {a: [\n"), `zkgen.yaml:4:1: invalid YAML: did not find expected node content (at or after this line)`},

	// tabs
	{"tab indentation", ok + "resources:\n\ta: {kind: lock, path: /a}\n", `zkgen.yaml:4:1: tab in indentation; YAML indents with spaces`},
	{"tab after spaces", ok + "resources:\n  \ta: {kind: lock, path: /a}\n", `zkgen.yaml:4:3: tab in indentation; YAML indents with spaces`},
	{"tab after a value", ok + "resources:\n  a: {kind: lock, path: /a}\n\tb: {kind: lock, path: /b}\n", `zkgen.yaml:5:1: tab in indentation; YAML indents with spaces`},
	{"tab on a comment line", ok + "\t# resources\nresources:\n  a: {kind: lock, path: /a}\n", `zkgen.yaml:3:1: tab in indentation; YAML indents with spaces`},
	{"tab after a dash", ok + "resources:\n  a:\n    kind: two_phase_commit\n    path: /a\n    participants:\n    -\tx\n", `zkgen.yaml:8:6: tab in indentation; YAML indents with spaces`},
	{"tab in a block scalar is text", ok + "resources:\n  a:\n    kind: lock\n    path: /a\n    doc: |\n      text\n      \twith a tab\n    layout: zk\n", `zkgen.yaml:10:13: resources.a.layout: must be one of curator, kazoo, got "zk"`},
	{"tab in a flow mapping is a blank", ok + "resources:\n  a: {kind: lock,\n\tpath: /a, layout: zk]\n", `zkgen.yaml:5:22: invalid YAML: did not find expected ',' or '}' (the flow mapping opened on line 4 is still open here)`},
	{"invalid utf8", "version: 1\npackage: p\xff\n", `zkgen.yaml:2:11: invalid YAML: invalid UTF-8 byte 0xff`},
	{"control character", "version: 1\npackage: \x01p\n", `zkgen.yaml:2:10: invalid YAML: control character U+0001 is not allowed`},
	{"empty file", "", `zkgen.yaml:1:1: empty spec; it must start with "version: 1"`},
	{"only comments", "# nothing\n", `zkgen.yaml:1:1: empty spec; it must start with "version: 1"`},
	{"null document", "---\n", `zkgen.yaml:1:1: empty spec; it must start with "version: 1"`},
	{"two documents", res("  a: {kind: lock, path: /a}") + "---\nversion: 1\n", `zkgen.yaml:6:1: a spec is a single YAML document; found a second one`},
	{"root is a list", "- version: 1\n", `zkgen.yaml:1:1: must be a mapping, got a list`},
	{"unknown anchor", ok + "resources: *r\n", `zkgen.yaml:3:12: invalid YAML: unknown anchor 'r' referenced`},

	// strict decoding
	{"unknown top-level key with suggestion", res("  a: {kind: lock, path: /a}") + "pakage: q\n", `zkgen.yaml:5:1: unknown field "pakage"; did you mean "package"?`},
	{"misspelled required top-level key", ok + "resorces:\n  a: {kind: lock, path: /a}\n", `zkgen.yaml:3:1: unknown field "resorces"; did you mean "resources"?`},
	{"misspelled package", "version: 1\npakage: p\nresources:\n  a: {kind: lock, path: /a}\n", `zkgen.yaml:2:1: unknown field "pakage"; did you mean "package"?`},
	{"misspelled version", "verison: 1\npackage: p\nresources:\n  a: {kind: lock, path: /a}\n", `zkgen.yaml:1:1: unknown field "verison"; did you mean "version"?`},
	{"unknown top-level key", res("  a: {kind: lock, path: /a}") + "extra: 1\n", `zkgen.yaml:5:1: unknown field "extra"; valid fields are version, package, output, root, acl, emit_interfaces, durations, types, resources`},
	{"duplicate key", res("  a: {kind: lock, path: /a}") + "package: q\n", `zkgen.yaml:5:1: duplicate key "package" (first defined at line 2)`},
	{"duplicate resource", res("  a: {kind: lock, path: /a}", "  a: {kind: lock, path: /b}"), `zkgen.yaml:5:3: resources: duplicate key "a" (first defined at line 4)`},
	{"list where a mapping is expected", ok + "resources: [a, b]\n", `zkgen.yaml:3:12: resources: must be a mapping, got a list`},
	{"mapping where a string is expected", ok + "output: {a: b}\nresources: {a: {kind: lock, path: /a}}\n", `zkgen.yaml:3:9: output: must be a string, got a mapping`},
	{"non-scalar key", ok + "resources:\n  [a]: {kind: lock, path: /a}\n", `zkgen.yaml:4:3: resources: keys must be plain names, got a list`},

	// version
	{"version missing", "package: p\nresources: {a: {kind: lock, path: /a}}\n", `zkgen.yaml:1:1: missing required field "version"; a spec starts with "version: 1"`},
	{"version not first", "package: p\nversion: 1\nresources: {a: {kind: lock, path: /a}}\n", `zkgen.yaml:2:1: version: must be the first key of the spec`},
	{"version unknown", "version: 2\npackage: P\n", `zkgen.yaml:1:10: version: unknown version 2; this zkgen knows version 1`},
	{"version not an integer", "version: \"1\"\npackage: p\n", `zkgen.yaml:1:10: version: must be the integer 1, got string "1"`},

	// package
	{"package missing", "version: 1\nresources: {a: {kind: lock, path: /a}}\n", `zkgen.yaml:1:1: missing required field "package"`},
	{"package not lower-case", "version: 1\npackage: Coord\nresources: {a: {kind: lock, path: /a}}\n", `zkgen.yaml:2:10: package: must be a lower-case Go identifier ([a-z][a-z0-9_]*), got "Coord"`},
	{"package keyword", "version: 1\npackage: func\nresources: {a: {kind: lock, path: /a}}\n", `zkgen.yaml:2:10: package: "func" is a Go keyword`},
	{"package predeclared", "version: 1\npackage: string\nresources: {a: {kind: lock, path: /a}}\n", `zkgen.yaml:2:10: package: "string" is a predeclared Go identifier`},

	// output
	{"output absolute", res("  a: {kind: lock, path: /a}") + "output: /tmp/x.go\n", `zkgen.yaml:5:9: output: must be relative to the spec file, got "/tmp/x.go"`},
	{"output not .go", res("  a: {kind: lock, path: /a}") + "output: x.txt\n", `zkgen.yaml:5:9: output: must end in .go, got "x.txt"`},
	{"output test file", res("  a: {kind: lock, path: /a}") + "output: x_test.go\n", `zkgen.yaml:5:9: output: must not be a _test.go file, got "x_test.go"`},
	{"output backslash", res("  a: {kind: lock, path: /a}") + "output: 'a\\x.go'\n", `zkgen.yaml:5:9: output: must use forward slashes, got "a\\x.go"`},
	{"output unclean", res("  a: {kind: lock, path: /a}") + "output: ./gen//x.go\n", `zkgen.yaml:5:9: output: must be a clean path; did you mean "gen/x.go"?`},
	{"output ignored", res("  a: {kind: lock, path: /a}") + "output: gen/_x.go\n", `zkgen.yaml:5:9: output: file name "_x.go" starts with "_", so the go tool would ignore it`},
	{"output GOOS suffix", res("  a: {kind: lock, path: /a}") + "output: x_linux.go\n", `zkgen.yaml:5:9: output: file name "x_linux.go" ends in a GOOS or GOARCH suffix, so the go tool would build it only there`},

	// root
	{"root relative", res("  a: {kind: lock, path: /a}") + "root: app\n", `zkgen.yaml:5:7: root: must be absolute (start with "/"), got "app"`},
	{"root trailing slash", res("  a: {kind: lock, path: /a}") + "root: /app/\n", `zkgen.yaml:5:7: root: must not end with "/", got "/app/"`},
	{"root empty segment", res("  a: {kind: lock, path: /a}") + "root: /app//x\n", `zkgen.yaml:5:7: root: must not contain empty segments (//), got "/app//x"`},
	{"root dot segment", res("  a: {kind: lock, path: /a}") + "root: /app/..\n", `zkgen.yaml:5:7: root: must not contain "." or ".." segments, got "/app/.."`},
	{"root parameter", res("  a: {kind: lock, path: /a}") + "root: '/app/{x:int}'\n", `zkgen.yaml:5:7: root: must not contain parameters; {name:type} segments belong in resource paths`},
	{"root zookeeper", res("  a: {kind: lock, path: /a}") + "root: /zookeeper/quota\n", `zkgen.yaml:5:7: root: must not be /zookeeper or below it; ZooKeeper reserves that subtree`},
	{"root space", res("  a: {kind: lock, path: /a}") + "root: /my app\n", `zkgen.yaml:5:7: root: segment "my app" contains " "; literal segments are printable ASCII without spaces, '{' or '}'`},

	// acl
	{"acl unknown policy", res("  a: {kind: lock, path: /a}") + "acl: world_al\n", `zkgen.yaml:5:6: acl: unknown acl "world_al"; use world_all, world_read, creator_all or a list of {digest: "user:hash", perms: rwcda}; did you mean "world_all"?`},
	{"acl mapping", res("  a: {kind: lock, path: /a}") + "acl: {digest: 'a:b', perms: r}\n", `zkgen.yaml:5:6: acl: must be world_all, world_read, creator_all or a list of {digest: "user:hash", perms: rwcda}, got a mapping`},
	{"acl empty list", res("  a: {kind: lock, path: /a}") + "acl: []\n", `zkgen.yaml:5:6: acl: must list at least one digest user, or be one of world_all, world_read, creator_all`},
	{"acl digest without colon", res("  a: {kind: lock, path: /a}") + "acl: [{digest: alice, perms: r}]\n", `zkgen.yaml:5:16: acl[0].digest: must be "user:hash" with hash = base64(sha1("user:password")), got "alice"`},
	{"acl digest two colons", res("  a: {kind: lock, path: /a}") + "acl: [{digest: 'a:b:c', perms: r}]\n", `zkgen.yaml:5:16: acl[0].digest: must be "user:hash" with hash = base64(sha1("user:password")), got "a:b:c"`},
	{"acl digest empty user", res("  a: {kind: lock, path: /a}") + "acl: [{digest: ':hash', perms: r}]\n", `zkgen.yaml:5:16: acl[0].digest: must be "user:hash" with hash = base64(sha1("user:password")), got ":hash"`},
	{"acl perms empty", res("  a: {kind: lock, path: /a}") + "acl: [{digest: 'a:h', perms: ''}]\n", `zkgen.yaml:5:30: acl[0].perms: must not be empty; use letters from rwcda (read, write, create, delete, admin), each at most once`},
	{"acl perms unknown", res("  a: {kind: lock, path: /a}") + "acl: [{digest: 'a:h', perms: rwx}]\n", `zkgen.yaml:5:30: acl[0].perms: unknown permission "x"; use letters from rwcda (read, write, create, delete, admin), each at most once`},
	{"acl perms repeated", res("  a: {kind: lock, path: /a}") + "acl: [{digest: 'a:h', perms: rwr}]\n", `zkgen.yaml:5:30: acl[0].perms: permission "r" is repeated; use letters from rwcda (read, write, create, delete, admin), each at most once`},
	{"acl entry missing fields", res("  a: {kind: lock, path: /a}") + "acl: [{}]\n", `zkgen.yaml:5:7: acl[0]: missing required field "digest"
zkgen.yaml:5:7: acl[0]: missing required field "perms"`},
	{"acl entry unknown key", res("  a: {kind: lock, path: /a}") + "acl: [{digest: 'a:h', perms: r, perm: w}]\n", `zkgen.yaml:5:33: acl[0]: unknown field "perm"; did you mean "perms"?`},
	{"acl entry misspelled key", res("  a: {kind: lock, path: /a}") + "acl: [{digest: 'a:h', perm: w}]\n", `zkgen.yaml:5:23: acl[0]: unknown field "perm"; did you mean "perms"?`},
	{"acl duplicate user", res("  a: {kind: lock, path: /a}") + "acl: [{digest: 'a:h', perms: r}, {digest: 'a:h', perms: w}]\n", `zkgen.yaml:5:34: acl[1]: duplicate digest user "a:h" (also acl[0])`},
	{"resource acl", res("  a: {kind: lock, path: /a, acl: everyone}"), `zkgen.yaml:4:34: resources.a.acl: unknown acl "everyone"; use world_all, world_read, creator_all or a list of {digest: "user:hash", perms: rwcda}`},

	// types
	{"type name invalid", res("  a: {kind: lock, path: /a}") + "types:\n  1Job: {fields: {a: int}}\n", `zkgen.yaml:6:3: types.1Job: type names must be identifiers ([A-Za-z][A-Za-z0-9_]*), got "1Job"`},
	{"type name builtin", res("  a: {kind: lock, path: /a}") + "types:\n  string: {fields: {a: int}}\n", `zkgen.yaml:6:3: types.string: type name "string" is a builtin type; pick another name`},
	{"type fields and go_type", res("  a: {kind: lock, path: /a}") + "types:\n  Job: {fields: {a: int}, go_type: x.Y}\n", `zkgen.yaml:6:8: types.Job: must have exactly one of fields (declared fields) or go_type (an existing Go type)`},
	{"type neither", res("  a: {kind: lock, path: /a}") + "types:\n  Job: {}\n", `zkgen.yaml:6:8: types.Job: must have exactly one of fields (declared fields) or go_type (an existing Go type)`},
	{"type unknown key", res("  a: {kind: lock, path: /a}") + "types:\n  Job: {field: {a: int}}\n", `zkgen.yaml:6:9: types.Job: unknown field "field"; did you mean "fields"?`},
	{"type unknown key without suggestion", res("  a: {kind: lock, path: /a}") + "types:\n  Job: {x: {a: int}}\n", `zkgen.yaml:6:8: types.Job: must have exactly one of fields (declared fields) or go_type (an existing Go type)
zkgen.yaml:6:9: types.Job: unknown field "x"; valid fields are fields, go_type`},
	{"go_type without package", res("  a: {kind: lock, path: /a}") + "types:\n  Ext: {go_type: Order}\n", `zkgen.yaml:6:18: types.Ext.go_type: must be an import path and a type name; use "import/path.Name", e.g. "github.com/acme/app/model.Order", got "Order"`},
	{"go_type unexported", res("  a: {kind: lock, path: /a}") + "types:\n  Ext: {go_type: example.com/m.order}\n", `zkgen.yaml:6:18: types.Ext.go_type: type name "order" must be an exported Go identifier; use "import/path.Name", e.g. "github.com/acme/app/model.Order"`},
	{"go_type bad path", res("  a: {kind: lock, path: /a}") + "types:\n  Ext: {go_type: 'example.com/a b.Order'}\n", `zkgen.yaml:6:18: types.Ext.go_type: import path "example.com/a b" may contain only letters, digits and -._~+/; use "import/path.Name", e.g. "github.com/acme/app/model.Order"`},
	{"field name not snake_case", res("  a: {kind: lock, path: /a}") + "types:\n  Job: {fields: {userId: int}}\n", `zkgen.yaml:6:18: types.Job.fields.userId: field names must be snake_case ([a-z][a-z0-9]*(_[a-z0-9]+)*), got "userId"`},
	{"field Go names collide", res("  a: {kind: lock, path: /a}") + "types:\n  Job: {fields: {a_1: int, a1: int}}\n", `zkgen.yaml:6:28: types.Job.fields.a1: fields "a_1" and "a1" both become Go field A1`},
	{"field type unknown", res("  a: {kind: lock, path: /a}") + "types:\n  Job: {fields: {a: Strng, b: '[]Jb'}}\n", `zkgen.yaml:6:21: types.Job.fields.a: unknown type "Strng"; use bytes, string, int, bool, float, duration, time, a name under types:, or []T of those; did you mean "string"?
zkgen.yaml:6:31: types.Job.fields.b: unknown type "Jb"; use bytes, string, int, bool, float, duration, time, a name under types:, or []T of those; did you mean "Job"?`},
	{"field type not a string", res("  a: {kind: lock, path: /a}") + "types:\n  Job: {fields: {a: [int]}}\n", `zkgen.yaml:6:21: types.Job.fields.a: must be a string, got a list`},
	{"recursive types", res("  a: {kind: lock, path: /a}") + "types:\n  A: {fields: {b: B}}\n  B: {fields: {c: C}}\n  C: {fields: {a: A, ok: '[]A'}}\n", `zkgen.yaml:8:16: types.C.fields.a: recursive type A -> B -> C -> A; a value cannot contain itself, use a slice ([]A) to break the cycle`},
	{"self-recursive type", res("  a: {kind: lock, path: /a}") + "types:\n  Node: {fields: {next: Node, kids: '[]Node'}}\n", `zkgen.yaml:6:19: types.Node.fields.next: recursive type Node -> Node; a value cannot contain itself, use a slice ([]Node) to break the cycle`},

	// resources and kinds
	{"resources missing", ok, `zkgen.yaml:1:1: missing required field "resources"`},
	{"resources empty", ok + "resources: {}\n", `zkgen.yaml:3:12: resources: must declare at least one resource`},
	{"resource name not snake_case", res("  OrderLock: {kind: lock, path: /a}"), `zkgen.yaml:4:3: resources.OrderLock: resource names must be snake_case ([a-z][a-z0-9]*(_[a-z0-9]+)*), got "OrderLock"`},
	{"resource not a mapping", res("  a: lock"), `zkgen.yaml:4:6: resources.a: must be a mapping, got string "lock"`},
	{"kind missing", res("  a: {path: /a}"), `zkgen.yaml:4:3: resources.a: missing required field "kind" (one of ` + kindList() + `)`},
	{"kind unknown", res("  a: {kind: lok, path: /a}"), `zkgen.yaml:4:13: resources.a.kind: unknown kind "lok"; known kinds are ` + kindList() + `; did you mean "lock"?`},
	{"kind unknown without suggestion", res("  a: {kind: mutex, path: /a}"), `zkgen.yaml:4:13: resources.a.kind: unknown kind "mutex"; known kinds are ` + kindList()},
	{"field of another kind", res("  a: {kind: lock, path: /a, leases: 3}"), `zkgen.yaml:4:29: resources.a: field "leases" is not valid for kind lock (only for ` + kindsTaking("leases") + `)`},
	{"unknown resource field", res("  a: {kind: semaphore, path: /a, leasse: 3}"), `zkgen.yaml:4:34: resources.a: unknown field "leasse"; did you mean "leases"?`},
	{"unknown resource field without suggestion", res("  a: {kind: semaphore, path: /a, xyz: 3}"), `zkgen.yaml:4:3: resources.a: missing required field "leases" for kind semaphore
zkgen.yaml:4:34: resources.a: unknown field "xyz"; valid fields are kind, path, doc, acl, leases, layout`},
	{"kind misspelled", res("  a: {knd: lock, path: /a}"), `zkgen.yaml:4:7: resources.a: unknown field "knd"; did you mean "kind"?`},
	{"path misspelled", res("  a: {kind: lock, pth: /a}"), `zkgen.yaml:4:19: resources.a: unknown field "pth"; did you mean "path"?`},
	{"path missing", res("  a: {kind: barrier}"), `zkgen.yaml:4:3: resources.a: missing required field "path"`},
	{"semaphore without leases", res("  a: {kind: semaphore, path: /a}"), `zkgen.yaml:4:3: resources.a: missing required field "leases" for kind semaphore`},
	{"queue without item", res("  a: {kind: queue, path: /a}"), `zkgen.yaml:4:3: resources.a: missing required field "item" for kind queue`},
	{"priority queue without item and priorities", res("  a: {kind: priority_queue, path: /a}"), `zkgen.yaml:4:3: resources.a: missing required field "item" for kind priority_queue
zkgen.yaml:4:3: resources.a: missing required field "priorities" for kind priority_queue`},
	{"double barrier without size", res("  a: {kind: double_barrier, path: /a}"), `zkgen.yaml:4:3: resources.a: missing required field "size" for kind double_barrier`},
	{"two phase commit without participants", res("  a: {kind: two_phase_commit, path: /a}"), `zkgen.yaml:4:3: resources.a: missing required field "participants" for kind two_phase_commit`},
	{"counter takes no value", res("  a: {kind: counter, path: /a, value: int}"), `zkgen.yaml:4:32: resources.a: field "value" is not valid for kind counter (only for ` + kindsTaking("value") + `)`},
	{"doc not a string", res("  a: {kind: counter, path: /a, doc: [x]}"), `zkgen.yaml:4:37: resources.a.doc: must be a string, got a list`},

	// lock options
	{"revocable wrong kind", res("  a: {kind: lock, path: /a, revocable: 5s}"), `zkgen.yaml:4:40: resources.a.revocable: must be true, false or {force_after: <duration>}, got string "5s"`},
	{"revocable without force_after", res("  a: {kind: lock, path: /a, revocable: {}}"), `zkgen.yaml:4:40: resources.a.revocable: missing required field "force_after"; use revocable: true to allow revocation without forcing`},
	{"revocable unknown key", res("  a: {kind: lock, path: /a, revocable: {force_afer: 5s}}"), `zkgen.yaml:4:41: resources.a.revocable: unknown field "force_afer"; did you mean "force_after"?`},
	{"revocable unknown key without suggestion", res("  a: {kind: lock, path: /a, revocable: {after: 5s}}"), `zkgen.yaml:4:40: resources.a.revocable: missing required field "force_after"; use revocable: true to allow revocation without forcing
zkgen.yaml:4:41: resources.a.revocable: unknown field "after"; valid fields are force_after`},
	{"force_after bad duration", res("  a: {kind: rwlock, path: /a, revocable: {force_after: 5 sec}}"), `zkgen.yaml:4:56: resources.a.revocable.force_after: must be a duration such as 5s, 500ms or 1m30s, got "5 sec"`},
	{"force_after not a string", res("  a: {kind: rwlock, path: /a, revocable: {force_after: 5}}"), `zkgen.yaml:4:56: resources.a.revocable.force_after: must be a duration such as 5s, 500ms or 1m30s, got integer 5`},
	{"force_after zero", res("  a: {kind: rwlock, path: /a, revocable: {force_after: 0s}}"), `zkgen.yaml:4:56: resources.a.revocable.force_after: must be > 0, got "0s"`},
	{"layout unknown", res("  a: {kind: lock, path: /a, layout: zk}"), `zkgen.yaml:4:37: resources.a.layout: must be one of curator, kazoo, got "zk"`},
	{"prefetch at least once", res("  a: {kind: queue, path: /a, item: int, delivery: at_least_once, prefetch: 8}"), `zkgen.yaml:4:76: resources.a.prefetch: needs delivery: at_most_once (delivery is at_least_once: each item is claimed and acked on its own)`},
	{"prefetch too large", res("  a: {kind: queue, path: /a, item: int, prefetch: 1001}"), `zkgen.yaml:4:51: resources.a.prefetch: must be <= 1000 (items a consumer takes in one multi)`},
	{"prefetch zero", res("  a: {kind: queue, path: /a, item: int, prefetch: 0}"), `zkgen.yaml:4:51: resources.a.prefetch: must be >= 1, got 0`},
	{"prefetch on a priority queue", res("  a: {kind: priority_queue, path: /a, item: int, priorities: [x], prefetch: 4}"), `zkgen.yaml:4:67: resources.a: field "prefetch" is not valid for kind priority_queue (only for queue)`},
	{"delivery unknown", res("  a: {kind: queue, path: /a, item: int, delivery: at_least_one}"), `zkgen.yaml:4:51: resources.a.delivery: must be one of at_most_once, at_least_once, got "at_least_one"; did you mean "at_least_once"?`},
	{"notify unknown", res("  a: {kind: two_phase_commit, path: /a, participants: [x], notify: everyone}"), `zkgen.yaml:4:68: resources.a.notify: must be one of all, coordinator, got "everyone"`},

	// integers
	{"leases zero", res("  slots: {kind: semaphore, path: /a, leases: 0}"), `zkgen.yaml:4:46: resources.slots.leases: must be >= 1, got 0`},
	{"leases negative", res("  slots: {kind: semaphore, path: /a, leases: -2}"), `zkgen.yaml:4:46: resources.slots.leases: must be >= 1, got -2`},
	{"leases float", res("  slots: {kind: semaphore, path: /a, leases: 3.5}"), `zkgen.yaml:4:46: resources.slots.leases: must be an integer >= 1, got number 3.5`},
	{"leases string", res("  slots: {kind: semaphore, path: /a, leases: three}"), `zkgen.yaml:4:46: resources.slots.leases: must be an integer >= 1, got string "three"`},
	{"leases quoted", res("  slots: {kind: semaphore, path: /a, leases: \"3\"}"), `zkgen.yaml:4:46: resources.slots.leases: must be an integer >= 1, got string "3"`},
	{"size huge", res("  a: {kind: double_barrier, path: /a, size: 3000000000}"), `zkgen.yaml:4:45: resources.a.size: must be <= 2147483647, got 3000000000`},
	{"size beyond int64", res("  a: {kind: double_barrier, path: /a, size: 99999999999999999999}"), `zkgen.yaml:4:45: resources.a.size: must be <= 2147483647, got 99999999999999999999`},
	{"durations unknown", "version: 1\npackage: p\ndurations: seconds\nresources:\n  a: {kind: lock, path: /a}\n", `zkgen.yaml:3:12: durations: must be one of string, nanoseconds, got "seconds"`},
	{"size beyond int32", res("  a: {kind: double_barrier, path: /a, size: 2147483648}"), `zkgen.yaml:4:45: resources.a.size: must be <= 2147483647, got 2147483648`},
	{"leases beyond int64, negative", res("  a: {kind: semaphore, path: /a, leases: -99999999999999999999}"), `zkgen.yaml:4:42: resources.a.leases: must be >= 1, got -99999999999999999999`},
	{"size a real number", res("  a: {kind: double_barrier, path: /a, size: 1.5e30}"), `zkgen.yaml:4:45: resources.a.size: must be an integer >= 1, got number 1.5e30`},

	// payload types
	{"item unknown type", ok + "types:\n  Job: {fields: {a: int}}\nresources:\n  a: {kind: queue, path: /a, item: Jbo}\n", `zkgen.yaml:6:36: resources.a.item: unknown type "Jbo"; use bytes, string, int, bool, float or a name under types:; did you mean "Job"?`},
	{"payload duration", res("  a: {kind: election, path: /a, payload: duration}"), `zkgen.yaml:4:42: resources.a.payload: type "duration" cannot be used here; use bytes, string, int, bool, float or a name under types:`},
	{"member slice", res("  a: {kind: group, path: /a, member: '[]string'}"), `zkgen.yaml:4:38: resources.a.member: type "[]string" cannot be used here; use bytes, string, int, bool, float or a name under types:`},
	{"value time", res("  a: {kind: config, path: /a, value: time}"), `zkgen.yaml:4:38: resources.a.value: type "time" cannot be used here; use bytes, string, int, bool, float or a name under types:`},
	{"item not a string", res("  a: {kind: queue, path: /a, item: {name: string}}"), `zkgen.yaml:4:36: resources.a.item: must be a string, got a mapping`},

	// priorities and participants
	{"priorities empty", res("  t: {kind: priority_queue, path: /t, item: int, priorities: []}"), `zkgen.yaml:4:62: resources.t.priorities: must list at least one priority`},
	{"priorities not a list", res("  t: {kind: priority_queue, path: /t, item: int, priorities: urgent}"), `zkgen.yaml:4:62: resources.t.priorities: must be a list, got string "urgent"`},
	{"priorities duplicate", res("  t: {kind: priority_queue, path: /t, item: int, priorities: [urgent, bulk, urgent]}"), `zkgen.yaml:4:77: resources.t.priorities[2]: duplicate priority "urgent" (also resources.t.priorities[0])`},
	{"priority name invalid", res("  t: {kind: priority_queue, path: /t, item: int, priorities: [Urgent, 1]}"), `zkgen.yaml:4:63: resources.t.priorities[0]: priority names must be snake_case ([a-z][a-z0-9]*(_[a-z0-9]+)*), got "Urgent"
zkgen.yaml:4:71: resources.t.priorities[1]: must be a string, got integer 1`},
	{"participants duplicate", res("  d: {kind: two_phase_commit, path: /d, participants: [db, cache, db]}"), `zkgen.yaml:4:67: resources.d.participants[2]: duplicate participant "db" (also resources.d.participants[0])`},
	{"participants empty", res("  d: {kind: two_phase_commit, path: /d, participants: []}"), `zkgen.yaml:4:55: resources.d.participants: must list at least one participant`},
	{"participants collide after case conversion", res("  d: {kind: two_phase_commit, path: /d, participants: [db_1, db1]}"), `zkgen.yaml:4:62: resources.d.participants[1]: participant "db1" and participant "db_1" (resources.d.participants[0]) both become Go name DDb1`},

	// paths
	{"path relative", res("  a: {kind: lock, path: a/b}"), `zkgen.yaml:4:25: resources.a.path: must be absolute (start with "/"), got "a/b"`},
	{"path trailing slash", res("  a: {kind: lock, path: /a/}"), `zkgen.yaml:4:25: resources.a.path: must not end with "/", got "/a/"`},
	{"path root only", res("  a: {kind: lock, path: /}"), `zkgen.yaml:4:25: resources.a.path: must name a node below "/", got "/"`},
	{"path empty segment", res("  a: {kind: lock, path: /a//b}"), `zkgen.yaml:4:25: resources.a.path: must not contain empty segments (//), got "/a//b"`},
	{"path dot-dot segment", res("  a: {kind: lock, path: /a/../b}"), `zkgen.yaml:4:25: resources.a.path: must not contain "." or ".." segments, got "/a/../b"`},
	{"path space", res("  a: {kind: lock, path: '/a/b c'}"), `zkgen.yaml:4:25: resources.a.path: segment "b c" contains " "; literal segments are printable ASCII without spaces, '{' or '}'`},
	{"path non-ASCII", res("  a: {kind: lock, path: /a/é}"), `zkgen.yaml:4:25: resources.a.path: segment "é" contains "é"; literal segments are printable ASCII without spaces, '{' or '}'`},
	{"path partial parameter", res("  a: {kind: lock, path: '/a/x{id:int}'}"), `zkgen.yaml:4:29: resources.a.path: segment "x{id:int}": a parameter must be a whole segment like {name:int} or {name:string}`},
	{"path parameter without type", res("  a: {kind: lock, path: '/a/{id}'}"), `zkgen.yaml:4:29: resources.a.path: parameter "{id}" must be {name:int} or {name:string}`},
	{"path parameter bad type", res("  a: {kind: lock, path: '/a/{id:float}'}"), `zkgen.yaml:4:29: resources.a.path: parameter "id" has type "float"; use int or string`},
	{"path parameter bad name", res("  a: {kind: lock, path: '/a/{Id:int}'}"), `zkgen.yaml:4:29: resources.a.path: parameter name "Id" must be snake_case ([a-z][a-z0-9]*(_[a-z0-9]+)*)`},
	{"path parameter keyword", res("  a: {kind: lock, path: '/a/{type:string}'}"), `zkgen.yaml:4:29: resources.a.path: parameter "type" would become the Go argument type, a Go keyword; rename it`},
	{"path parameter predeclared", res("  a: {kind: lock, path: '/a/{len:int}'}"), `zkgen.yaml:4:29: resources.a.path: parameter "len" would become the Go argument len, a predeclared Go identifier; rename it`},
	{"path parameter reserved", res("  a: {kind: lock, path: '/a/{ctx:string}'}"), `zkgen.yaml:4:29: resources.a.path: parameter "ctx" would become the Go argument ctx, a name reserved for generated code (c, ctx, runtime, json, time, fmt, context, errors, strconv); rename it`},
	{"path parameter unclosed", res("  a: {kind: lock, path: \"/a/{id:int\"}"), `zkgen.yaml:4:29: resources.a.path: segment "{id:int": a parameter must be a whole segment like {name:int} or {name:string}`},
	{"path parameter in a plain scalar", ok + "resources:\n  a:\n    kind: lock\n    path: /a/{id}\n", `zkgen.yaml:6:14: resources.a.path: parameter "{id}" must be {name:int} or {name:string}`},
	{"path parameter after non-ASCII", res("  é: {kind: lock, path: '/a/{id}'}"), `zkgen.yaml:4:3: resources."é": resource names must be snake_case ([a-z][a-z0-9]*(_[a-z0-9]+)*), got "é"
zkgen.yaml:4:29: resources."é".path: parameter "{id}" must be {name:int} or {name:string}`},
	{"path parameter after an escape", res("  a: {kind: lock, path: \"/\\x61/{id}\"}"), `zkgen.yaml:4:25: resources.a.path: parameter "{id}" must be {name:int} or {name:string}`},
	{"path parameter after a quoted quote", res("  a: {kind: lock, path: '/it''s/{id}'}"), `zkgen.yaml:4:25: resources.a.path: parameter "{id}" must be {name:int} or {name:string}`},
	{"path parameter on two lines", ok + "resources:\n  a:\n    kind: lock\n    path: \"/a/\n      {id}\"\n", `zkgen.yaml:6:11: resources.a.path: segment " {id}": a parameter must be a whole segment like {name:int} or {name:string}`},
	{"path parameter through an alias", res("  a: {kind: lock, path: &p '/a/{id:int}'}", "  b: {kind: lock, path: *p}"), `zkgen.yaml:5:25: resources.b.path: overlaps resources.a (/a/{id:int})`},
	{"path parameter error through an alias", ok + "x: &p '/a/{id}'\nresources:\n  a: {kind: lock, path: *p}\n", `zkgen.yaml:3:1: unknown field "x"; valid fields are version, package, output, root, acl, emit_interfaces, durations, types, resources
zkgen.yaml:5:25: resources.a.path: parameter "{id}" must be {name:int} or {name:string}`},
	{"path parameter repeated", res("  a: {kind: lock, path: '/a/{id:int}/{id:string}'}"), `zkgen.yaml:4:38: resources.a.path: parameter "id" appears twice; parameter names must be distinct`},
	{"path parameters collide", res("  a: {kind: lock, path: '/a/{a_1:int}/{a1:string}'}"), `zkgen.yaml:4:39: resources.a.path: parameters "a_1" and "a1" both become Go argument a1`},
	{"path under zookeeper", res("  a: {kind: lock, path: /zookeeper/quota/x}"), `zkgen.yaml:4:25: resources.a.path: full path "/zookeeper/quota/x" is /zookeeper or below it, which ZooKeeper reserves`},
	{"path not a string", res("  a: {kind: lock, path: 5}"), `zkgen.yaml:4:25: resources.a.path: must be a string, got integer 5`},

	// overlaps
	{"paths equal", res("  a: {kind: lock, path: /x}", "  b: {kind: lock, path: /x}"), `zkgen.yaml:5:25: resources.b.path: overlaps resources.a (/x)`},
	{"path below another", res("  a: {kind: lock, path: /x}", "  b: {kind: lock, path: /x/y}"), `zkgen.yaml:5:25: resources.b.path: overlaps resources.a (/x)`},
	{"path above another", res("  a: {kind: lock, path: /x/y/z}", "  b: {kind: lock, path: /x/y}"), `zkgen.yaml:5:25: resources.b.path: overlaps resources.a (/x/y/z)`},
	{"string parameter matches literal", res("  a: {kind: lock, path: '/x/{id:string}'}", "  b: {kind: lock, path: /x/abc}"), `zkgen.yaml:5:25: resources.b.path: overlaps resources.a (/x/{id:string})`},
	{"int parameter matches integer", res("  a: {kind: lock, path: '/x/{id:int}/l'}", "  b: {kind: lock, path: /x/42/l}"), `zkgen.yaml:5:25: resources.b.path: overlaps resources.a (/x/{id:int}/l)`},
	{"int parameter matches int parameter", res("  a: {kind: lock, path: '/x/{id:int}'}", "  b: {kind: lock, path: '/x/{n:int}/y'}"), `zkgen.yaml:5:25: resources.b.path: overlaps resources.a (/x/{id:int})`},
	{"earliest overlap named", res("  a: {kind: lock, path: /p/a}", "  b: {kind: lock, path: /p/b}", "  c: {kind: lock, path: '/p/{x:string}'}"), `zkgen.yaml:6:25: resources.c.path: overlaps resources.a (/p/a)`},
	{"overlap with root", "version: 1\npackage: p\nroot: /app\nresources:\n  a: {kind: lock, path: /x}\n  b: {kind: lock, path: /x}\n", `zkgen.yaml:6:25: resources.b.path: overlaps resources.a (/app/x)`},

	// Go identifiers
	{"resources collide after case conversion", res("  a_1: {kind: lock, path: /a}", "  a1: {kind: lock, path: /b}"), `zkgen.yaml:5:3: resources.a1: resource "a1" and resource "a_1" (resources.a_1) both become Go name A1`},
	{"types collide after case conversion", res("  a: {kind: lock, path: /a}") + "types:\n  a_1: {fields: {x: int}}\n  A1: {fields: {x: int}}\n", `zkgen.yaml:7:3: types.A1: type "A1" and type "a_1" (types.a_1) both become Go name A1`},
	{"type named Client", res("  a: {kind: lock, path: /a}") + "types:\n  Client: {fields: {x: int}}\n", `zkgen.yaml:6:3: types.Client: type "Client" becomes Go name Client, which is taken by the generated Client type`},
	{"type named new", res("  a: {kind: lock, path: /a}") + "types:\n  new: {fields: {x: int}}\n", `zkgen.yaml:6:3: types.new: type "new" becomes Go name New, which is taken by the generated New function`},
	{"service path with a parameter", res("  s: {kind: service, path: \"/s/{x:int}\", instance: string}"), `zkgen.yaml:4:28: resources.s.path: a service's path is the base of its instances and takes no parameters, got "/s/{x:int}"`},
	{"service without instance", res("  s: {kind: service, path: /s}"), `zkgen.yaml:4:3: resources.s: missing required field "instance" for kind service`},
	{"service instance unknown", res("  s: {kind: service, path: /s, instance: Nope}"), `zkgen.yaml:4:42: resources.s.instance: unknown type "Nope"; use bytes, string, int, bool, float or a name under types:`},
	{"service name with a slash", res("  s: {kind: service, path: /s, instance: int, name: a/b}"), `zkgen.yaml:4:53: resources.s.name: must be one node name, without "/", got "a/b"`},
	{"service name dot dot", res("  s: {kind: service, path: /s, instance: int, name: ..}"), `zkgen.yaml:4:53: resources.s.name: must be a node name (not empty, "." or ".."), got ".."`},
	{"service name with a space", res("  s: {kind: service, path: /s, instance: int, name: \"a b\"}"), `zkgen.yaml:4:53: resources.s.name: segment "a b" contains " "; literal segments are printable ASCII without spaces, '{' or '}'`},
	{"two services of one name on a base", res("  a: {kind: service, path: /s, instance: int}", "  b: {kind: service, path: /s, instance: int, name: a}"), `zkgen.yaml:5:28: resources.b.path: overlaps resources.a (/s/a)`},
	{"service constructor and a type", ok + "types:\n  NewPay: {fields: {a: int}}\n" + "resources:\n  pay: {kind: service, path: /s, instance: int}\n", `zkgen.yaml:6:3: resources.pay: the constructor of service "pay" and type "NewPay" (types.NewPay) both become Go name NewPay`},
	{"name field on a lock", res("  a: {kind: lock, path: /a, name: x}"), `zkgen.yaml:4:29: resources.a: field "name" is not valid for kind lock (only for service)`},
	{"too many partitions", res("  p: {kind: partitioner, path: /p, partitions: 100000000}"), `zkgen.yaml:4:48: resources.p.partitions: must be <= 65536, got 100000000: the partitioner's plan and the listing of its owners must fit ZooKeeper's 1 MiB jute.maxbuffer`},
	{"resource named session", res("  session: {kind: lock, path: /a}"), `zkgen.yaml:4:3: resources.session: resource "session" becomes Go name Session, which is taken by the generated Client.Session method`},
	{"type named run", res("  a: {kind: lock, path: /a}") + "types:\n  run: {fields: {x: int}}\n", `zkgen.yaml:6:3: types.run: type "run" becomes Go name Run, which is taken by the generated Run function`},
	{"priority constant collides with type", "version: 1\npackage: p\ntypes:\n  TasksUrgent: {fields: {x: int}}\nresources:\n  tasks: {kind: priority_queue, path: /t, item: int, priorities: [urgent]}\n", `zkgen.yaml:6:67: resources.tasks.priorities[0]: priority "urgent" and type "TasksUrgent" (types.TasksUrgent) both become Go name TasksUrgent`},
	{"constants of two resources collide", res("  a: {kind: priority_queue, path: /a, item: int, priorities: [b_c]}", "  a_b: {kind: two_phase_commit, path: /b, participants: [c]}"), `zkgen.yaml:5:58: resources.a_b.participants[0]: participant "c" and priority "b_c" (resources.a.priorities[0]) both become Go name ABC`},

	// aliases and merge keys
	{"error inside an anchor", res("  a: &l {kind: lock, path: /a, layout: zk}", "  b: *l"), `zkgen.yaml:4:28: resources.b.path: overlaps resources.a (/a)
zkgen.yaml:4:40: resources.a.layout: must be one of curator, kazoo, got "zk"
zkgen.yaml:4:40: resources.b.layout: must be one of curator, kazoo, got "zk"`},
	{"merge key of a scalar", res("  a: {<<: 1, kind: lock, path: /a}"), `zkgen.yaml:4:11: resources.a: a merge key (<<) takes a mapping or a list of mappings, got integer 1`},
}

func TestParseErrors(t *testing.T) {
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("zkgen.yaml", []byte(tc.in))
			if err == nil {
				t.Fatalf("no error; spec %+v", s)
			}
			if s != nil {
				t.Errorf("spec is not nil on error")
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error is %T, want Errors", err)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("input:\n%s\ngot:\n%s\nwant:\n%s", tc.in, got, tc.want)
			}
		})
	}
}

func TestEmitInterfaces(t *testing.T) {
	base := "version: 1\npackage: p\nresources:\n  a: {kind: lock, path: /a}\n"
	s, err := Parse("zkgen.yaml", []byte(base))
	if err != nil || !s.EmitInterfaces {
		t.Fatalf("default: %v, %v", s, err)
	}
	s, err = Parse("zkgen.yaml", []byte("version: 1\npackage: p\nemit_interfaces: false\nresources:\n  a: {kind: lock, path: /a}\n"))
	if err != nil || s.EmitInterfaces {
		t.Fatalf("off: %v, %v", s, err)
	}
	_, err = Parse("zkgen.yaml", []byte("version: 1\npackage: p\nresources:\n  a: {kind: lock, path: /a}\ntypes:\n  AHandle: {fields: {x: int}}\n"))
	if err == nil || !strings.Contains(err.Error(), "AHandle") {
		t.Fatalf("a type named like a handle interface: %v", err)
	}
}

// The names the generated caches take (<Resource>Cache methods, <Resource>Key
// types) collide with a resource's or a type's of the same Go name.
func TestCacheNamesCollide(t *testing.T) {
	for _, tc := range []struct{ spec, name string }{
		{"resources:\n  a: {kind: lock, path: /a}\n  a_cache: {kind: lock, path: /b}\n", "ACache"},
		{"resources:\n  a: {kind: lock, path: \"/a/{x:int}/{y:int}\"}\ntypes:\n  AKey: {fields: {x: int}}\n", "AKey"},
	} {
		_, err := Parse("zkgen.yaml", []byte("version: 1\npackage: p\n"+tc.spec))
		if err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
