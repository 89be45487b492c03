// Package bind ties the spec's settings to the runtime, one table per
// setting: the runtime value that the live commands (zkgen inspect, reap,
// provision) use, and the name of the same runtime identifier that
// generated code spells out (package templates). Generated handles and the
// live commands therefore agree on node names and ACLs by construction.
package bind

import (
	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

// Layout binds a spec layout to the runtime.
type Layout struct {
	Value runtime.Layout // for the handles the live commands open
	Name  string         // the runtime constant generated code names
}

// Layouts binds every spec layout.
var Layouts = map[spec.Layout]Layout{
	spec.LayoutCurator: {runtime.LayoutCurator, "LayoutCurator"},
	spec.LayoutKazoo:   {runtime.LayoutKazoo, "LayoutKazoo"},
}

// LayoutOf returns the layout of a lock, rwlock, semaphore, election, group
// or counter resource, and whether its handle needs runtime.WithLayout for it
// (the default layout, Curator's, needs no option).
func LayoutOf(r *spec.Resource) (Layout, bool) {
	return Layouts[r.Layout], r.Layout != "" && r.Layout != spec.LayoutCurator
}

// LockOptions returns the runtime options that the live commands open the
// lock handles of r with: its layout, so that they see its nodes.
func LockOptions(r *spec.Resource) []runtime.LockOption {
	if l, ok := LayoutOf(r); ok {
		return []runtime.LockOption{runtime.WithLayout(l.Value)}
	}
	return nil
}

// HandleOptions returns the runtime options that the live commands open the
// semaphore, election, group and counter handles of r with: its layout.
func HandleOptions(r *spec.Resource) []runtime.HandleOption {
	if l, ok := LayoutOf(r); ok {
		return []runtime.HandleOption{runtime.WithLayout(l.Value)}
	}
	return nil
}

// ACLPolicy binds a named ACL policy to the runtime helper building it.
type ACLPolicy struct {
	Value func() []zk.ACL // the runtime helper
	Name  string          // its name, for generated code
}

// ACLPolicies binds every named ACL policy.
var ACLPolicies = map[spec.ACLPolicy]ACLPolicy{
	spec.ACLWorldAll:   {runtime.WorldAllACL, "WorldAllACL"},
	spec.ACLWorldRead:  {runtime.WorldReadACL, "WorldReadACL"},
	spec.ACLCreatorAll: {runtime.CreatorAllACL, "CreatorAllACL"},
}

// ZKACL turns a declared ACL into ZooKeeper's: world_all is everyone with
// every permission; world_read is read for everyone and every permission
// for the authenticated creator; creator_all is every permission for the
// authenticated creator only (the creating session must have credentials);
// a digest list grants each id its permissions. nil gives nil.
func ZKACL(a *spec.ACL) []zk.ACL {
	if a == nil {
		return nil
	}
	if a.Policy != "" {
		return ACLPolicies[a.Policy].Value()
	}
	users := make([]runtime.DigestUser, len(a.Digest))
	for i, d := range a.Digest {
		users[i] = runtime.DigestUser{ID: d.ID, Perms: d.Perms}
	}
	return runtime.DigestACL(users...)
}
