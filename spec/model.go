package spec

import "time"

// Kind is the kind of a declared resource.
type Kind string

// The resource kinds of the spec format.
const (
	KindLock           Kind = "lock"
	KindRWLock         Kind = "rwlock"
	KindSemaphore      Kind = "semaphore"
	KindQueue          Kind = "queue"
	KindPriorityQueue  Kind = "priority_queue"
	KindBarrier        Kind = "barrier"
	KindDoubleBarrier  Kind = "double_barrier"
	KindTwoPhaseCommit Kind = "two_phase_commit"
	KindElection       Kind = "election"
	KindGroup          Kind = "group"
	KindConfig         Kind = "config"
	KindCounter        Kind = "counter"
)

// Kinds lists every kind in the order the documentation presents them.
var Kinds = []Kind{
	KindLock, KindRWLock, KindSemaphore, KindQueue, KindPriorityQueue,
	KindBarrier, KindDoubleBarrier, KindTwoPhaseCommit, KindElection,
	KindGroup, KindConfig, KindCounter,
}

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
	Root    string // absolute ZooKeeper path, no trailing slash ("" means /)
	ACL     *ACL   // default ACL, nil when not set
	// EmitInterfaces (default true) makes the Client return one interface
	// per handle (<Resource>Handle) and satisfy the aggregate interface API,
	// so application tests can fake coordination.
	EmitInterfaces bool
	Types          []*Type
	Resources      []*Resource
}

// ACL is an access-control setting: one of the named policies, or digest users.
// Generated handles create every node with their resource's ACL
// (runtime.WithNodeACL), and zkgen provision creates parents with it.
type ACL struct {
	Pos    Pos
	Policy string       // "world_all", "world_read", "creator_all", or "" when Digest is set
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

// Resource is one declared coordination resource.
type Resource struct {
	Pos      Pos    // position of the resource's key (its name)
	KindPos  Pos    // position of the kind value
	Name     string // snake_case as declared
	GoName   string // CamelCase Go identifier (method on the client)
	Kind     Kind
	Path     string    // as written, relative to Root, starting with "/"
	FullPath string    // Root + Path
	Segments []Segment // of FullPath, without the leading empty segment
	Params   []*Param  // the parameters of Segments in order
	Doc      string
	ACL      *ACL // its own acl, else the top-level one; nil when neither is set

	// lock, rwlock
	Revocable  bool
	ForceAfter time.Duration // 0 when revocable without forcing
	Layout     string        // "curator" (default) or "kazoo"

	// semaphore
	Leases int

	// queue, priority_queue
	Item       *TypeRef
	Delivery   string // "at_most_once" (default) or "at_least_once"
	Priorities []Name

	// double_barrier
	Size int

	// two_phase_commit
	Participants []Name
	Payload      *TypeRef // also election
	Notify       string   // "all" (default) or "coordinator"

	// group
	Member *TypeRef

	// config
	Value *TypeRef
}

// Name is a declared name inside a resource (a priority or participant) with
// the Go constant it becomes (priority urgent of tasks -> TasksUrgent).
type Name struct {
	Name   string
	GoName string
}
