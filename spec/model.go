package spec

// Pos is a position in the spec file (1-based line and column).
type Pos struct {
	Line, Col int
}

// Spec is a parsed and validated zkgen spec. Slices keep source order.
type Spec struct {
	File    string // the spec file name as given (used in messages and the header)
	Version int
	Package string
	Output  string // relative to the spec file; defaults to <package>_zkgen.go
	// OutputPos is the position of the output value, the zero Pos when
	// output is not set. Tools that refuse an output outside the spec's
	// directory (OutputOutside) report it there.
	OutputPos Pos
	Root      string // absolute ZooKeeper path, no trailing slash ("" means /)
	ACL       *ACL   // default ACL, nil when not set
	// EmitInterfaces (default true) makes the Client return one interface
	// per handle (<Resource>Handle) and satisfy the aggregate interface API,
	// so application tests can fake coordination.
	EmitInterfaces bool
	// Durations is how generated payload types store their duration
	// fields: DurationsString (default) writes Go duration strings,
	// DurationsNanoseconds integer nanoseconds as zkgen did before; both
	// read either, for the two steps of a rolling upgrade.
	Durations DurationFormat
	Types     []*Type
	Resources []*Resource
}

// ACL is an access-control setting: one of the named policies, or digest users.
// Generated handles create every node with their resource's ACL
// (runtime.WithNodeACL), and zkgen provision creates parents with it.
type ACL struct {
	Pos    Pos
	Policy ACLPolicy    // a named policy, or "" when Digest is set
	Digest []DigestUser // explicit digest users
}

// DigestUser is one digest-authenticated user and its permissions, written in
// the spec as a list entry {digest: "user:base64(sha1(user:password))", perms: rwcda}.
type DigestUser struct {
	Pos   Pos
	ID    string // "user:hash", the ZooKeeper digest id
	Perms string // non-empty subset of "rwcda", each letter once
}

// Type is a declared payload type: either fields or an existing Go type.
type Type struct {
	Pos    Pos
	Name   string // as declared (used as the Go identifier after CamelCase)
	GoName string // Go identifier of the generated type
	Fields []*Field
	GoType string // "import/path.Name" for an existing type; empty for declared fields
}

// Field is one field of a declared type.
type Field struct {
	Pos    Pos
	Name   string  // snake_case as declared (the JSON key)
	GoName string  // CamelCase Go identifier
	Type   TypeRef // builtin, duration, time, []T or a declared type
}

// TypeRef is a reference to a type: a builtin ("bytes", "string", "int",
// "bool", "float", and for fields also "duration", "time"), a declared type
// name, or a slice of one of those ("[]T").
type TypeRef struct {
	Name  string // element type name
	Slice bool   // []Name
	Decl  *Type  // the declared type when Name is under types:, else nil
}

// Param is a typed path parameter, {name:int} or {name:string}.
type Param struct {
	Name   string // as written
	GoName string // lowerCamelCase Go argument name
	Type   string // "int" or "string"
}

// Segment is one segment of a resource path: a literal or a parameter.
type Segment struct {
	Literal string // set when Param is nil
	Param   *Param
}

// DurationFormat is how payload durations are stored (top-level durations).
type DurationFormat string

// The duration formats.
const (
	DurationsString      DurationFormat = "string"      // "1m30s"
	DurationsNanoseconds DurationFormat = "nanoseconds" // 90000000000
)

// Durations lists the valid duration formats, the default first.
var Durations = []DurationFormat{DurationsString, DurationsNanoseconds}

// RootPath is the spec's root as a znode path: Root, or "/" when unset.
func (s *Spec) RootPath() string {
	if s.Root == "" {
		return "/"
	}
	return s.Root
}
