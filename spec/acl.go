package spec

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// ACLPolicy is a named ACL policy (field acl).
type ACLPolicy string

// The named ACL policies.
const (
	ACLWorldAll   ACLPolicy = "world_all"   // every permission for everyone
	ACLWorldRead  ACLPolicy = "world_read"  // read for everyone, every permission for the authenticated creator
	ACLCreatorAll ACLPolicy = "creator_all" // every permission for the authenticated creator only
)

// ACLPolicies lists the named ACL policies.
var ACLPolicies = []ACLPolicy{ACLWorldAll, ACLWorldRead, ACLCreatorAll}

const aclHelp = `world_all, world_read, creator_all or a list of {digest: "user:hash", perms: rwcda}`

// acl decodes an ACL: a named policy or a non-empty list of digest users.
// It returns nil when the value is invalid.
func (p *parser) acl(n *yaml.Node, field string) *ACL {
	n = deref(n)
	a := &ACL{Pos: posOf(n)}
	switch n.Kind {
	case yaml.ScalarNode:
		s, ok := p.str(n, field)
		if !ok {
			return nil
		}
		names := stringsOf(ACLPolicies)
		if !slices.Contains(names, s) {
			p.errorf(n, field, "unknown acl %s; use %s%s", quote(s), aclHelp, didYouMean(s, names))
			return nil
		}
		a.Policy = ACLPolicy(s)
	case yaml.SequenceNode:
		items, ok := p.list(n, field)
		if !ok {
			return nil
		}
		if len(items) == 0 {
			p.errorf(n, field, "must list at least one digest user, or be one of %s", strings.Join(stringsOf(ACLPolicies), ", "))
			return nil
		}
		seen := map[string]int{}
		for i, it := range items {
			u, ok := p.digestUser(it, index(field, i))
			if !ok {
				a = nil
				continue
			}
			if j, dup := seen[u.ID]; dup {
				p.errorf(it, index(field, i), "duplicate digest user %s (also %s)", quote(u.ID), index(field, j))
				a = nil
				continue
			}
			seen[u.ID] = i
			if a != nil {
				a.Digest = append(a.Digest, u)
			}
		}
	default:
		p.errorf(n, field, "must be %s, got %s", aclHelp, describe(n))
		return nil
	}
	return a
}

// digestUser decodes one {digest: "user:hash", perms: rwcda} entry.
func (p *parser) digestUser(n *yaml.Node, field string) (DigestUser, bool) {
	u := DigestUser{Pos: posOf(n)}
	m, miss, ok := p.object(n, field, "digest", "perms")
	if !ok {
		return u, false
	}
	for _, k := range []string{"digest", "perms"} {
		if _, has := m[k]; !has {
			if !miss[k] {
				p.errorf(n, field, "missing required field %s", quote(k))
			}
			ok = false
		}
	}
	if e, has := m["digest"]; has {
		id, good := p.str(e.val, join(field, "digest"))
		user, hash, _ := strings.Cut(id, ":")
		if good && (strings.Count(id, ":") != 1 || user == "" || hash == "") {
			p.errorf(e.val, join(field, "digest"), `must be "user:hash" with hash = base64(sha1("user:password")), got %s`, quote(id))
			good = false
		}
		u.ID, ok = id, ok && good
	}
	if e, has := m["perms"]; has {
		perms, good := p.str(e.val, join(field, "perms"))
		if good {
			if msg := permsProblem(perms); msg != "" {
				p.errorf(e.val, join(field, "perms"), "%s", msg)
				good = false
			}
		}
		u.Perms, ok = perms, ok && good
	}
	return u, ok
}

// permsProblem says what is wrong with a permission string, or "".
func permsProblem(perms string) string {
	const help = "; use letters from rwcda (read, write, create, delete, admin), each at most once"
	if perms == "" {
		return "must not be empty" + help
	}
	for i, r := range perms {
		if !strings.ContainsRune("rwcda", r) {
			return "unknown permission " + quote(string(r)) + help
		}
		if strings.ContainsRune(perms[:i], r) {
			return "permission " + quote(string(r)) + " is repeated" + help
		}
	}
	return ""
}
