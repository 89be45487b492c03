package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Group is group membership on a znode directory (the ZooKeeper guide's "out
// of the box" application): each member is an ephemeral sequential node
// <dir>/_c_<uuid>-member-<seq> carrying the encoded member, so a member
// whose session ends leaves the group by itself. Members are listed in the
// order they joined. Children that are not member nodes are ignored.
//
// A Group handle stands for one member: Join on a handle that is a member
// returns ErrAlreadyHeld; after Leave it can join again. Two handles, even on
// one session, are two members. Methods are safe for concurrent use.
type Group[T any] struct {
	s     *Session
	dir   string
	err   error
	codec Codec[T]
	acl   []zk.ACL // of created nodes; empty: the session's default
	name  string   // WithResourceName

	busy slot // joining or a member
}

// Membership is one member's presence in a group, held until Leave or
// until it is lost: its session expired or was closed, or its member node
// was deleted by someone else. Node is the member node; Lost and Context
// report the end of the membership, and context.Cause wraps
// ErrMembershipLost on loss, ErrNotHeld after Leave.
type Membership[T any] struct {
	tenure
	g      *Group[T]
	member T
}

// NewGroup returns a member handle for the group at directory p, with
// members encoded by codec. It does no I/O; the directory and its parents are
// created (as container nodes) on first Join. If p is invalid, every method
// returns p's error. opts: WithNodeACL.
func NewGroup[T any](s *Session, p Path, codec Codec[T], opts ...HandleOption) *Group[T] {
	return &Group[T]{s: s, dir: p.String(), err: p.Err(), codec: codec, acl: handleOptions(opts).acl, name: handleOptions(opts).name}
}

// Path returns the group's directory.
func (g *Group[T]) Path() string { return g.dir }

// Join adds this member to the group: it creates the member's ephemeral node
// and returns once it exists. It blocks only for the create; if ctx ends
// first it returns ctx's error and removes the node if the create went
// through after all. The node stays until Leave or the end of the session.
func (g *Group[T]) Join(ctx context.Context, member T) (*Membership[T], error) {
	if g.err != nil {
		return nil, g.err
	}
	data, err := g.codec.Encode(member)
	if err != nil {
		return nil, fmt.Errorf("group %s: encoding member: %w", g.dir, err)
	}
	if !g.busy.take() {
		return nil, fmt.Errorf("group %s: %w", g.dir, ErrAlreadyHeld)
	}
	m, err := g.join(ctx, member, data)
	if err != nil {
		g.busy.free()
	}
	return m, err
}

func (g *Group[T]) join(ctx context.Context, member T, data []byte) (*Membership[T], error) {
	node, err := g.s.createProtected(ctx, g.acl, g.dir, groupMembers.prefix(0), data)
	if err != nil {
		return nil, err
	}
	h, err := g.s.startHoldAs(ctx, node, 0, false, ErrMembershipLost)
	if err != nil {
		return nil, g.s.abandon(node, err)
	}
	g.s.tel.tenureOf(h, "group", g.name, g.dir)
	return &Membership[T]{tenure: tenure{s: g.s, h: h}, g: g, member: member}, nil
}

// Member returns the member this membership was joined with.
func (m *Membership[T]) Member() T { return m.member }

// Leave removes the member node. It returns ErrMembershipLost if the
// membership had been lost (the node is gone already) and ErrNotMember on a
// second call. If ctx ends before the delete is confirmed, the delete
// carries on in the background (bounded) and Leave returns ctx's error.
// Either way the Group handle can join again.
func (m *Membership[T]) Leave(ctx context.Context) error {
	if !m.giveUp() {
		return fmt.Errorf("group %s: %w", m.g.dir, ErrNotMember)
	}
	defer m.g.busy.free()
	err := m.g.s.release(ctx, m.h)
	if errors.Is(err, ErrMembershipLost) {
		return fmt.Errorf("group %s: %w", m.h.node, ErrMembershipLost)
	}
	return err
}

// Members returns the current members in the order they joined. It does not
// block beyond the reads; a missing group directory is an empty group.
func (g *Group[T]) Members(ctx context.Context) ([]T, error) {
	if g.err != nil {
		return nil, g.err
	}
	kids, err := g.s.children(ctx, g.dir)
	if isNoNode(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []T
	for _, c := range groupMembers.sortContenders(kids) {
		data, _, err := g.s.get(ctx, joinPath(g.dir, c.name))
		if isNoNode(err) {
			continue // left meanwhile
		}
		if err != nil {
			return nil, err
		}
		v, err := g.codec.Decode(data)
		if err != nil {
			return nil, fmt.Errorf("group %s: member %s: %w", g.dir, c.name, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// Watch streams the member list: the current list first, then the full list
// after every change (a join or a leave, including a member whose session
// ended). Each read re-arms a child watch in the same request, so no change
// is missed; a consumer slower than the changes receives the newest list
// (intermediate lists may be skipped), and the final list is always
// delivered. Member data is read once per member node. A member whose data
// cannot be decoded is left out (and logged). The channel is closed when ctx
// or the session ends. While the group directory does not exist an exists
// watch waits for it, and may stay registered on the server after ctx ends
// until the directory is created.
func (g *Group[T]) Watch(ctx context.Context) <-chan []T {
	if g.err != nil {
		ch := make(chan []T)
		close(ch)
		return ch
	}
	cache := map[string]T{} // member node name -> member; used by the stream goroutine only
	return stream(ctx, g.s, "group "+g.dir, func(ctx context.Context) (snapshot[[]T], error) {
		var r getResult
		for {
			var err error
			r, err = g.s.childrenW(ctx, g.dir)
			if err == nil {
				break
			}
			if !isNoNode(err) {
				return snapshot[[]T]{}, err
			}
			ok, _, w, err := g.s.existsW(ctx, g.dir)
			if err != nil {
				return snapshot[[]T]{}, err
			}
			if !ok {
				clear(cache)
				return snapshot[[]T]{v: []T{}, key: "", watch: w}, nil
			}
			// Created between the two reads: list it.
		}
		cs := groupMembers.sortContenders(r.kids)
		list := make([]T, 0, len(cs))
		names := make([]string, 0, len(cs))
		live := make(map[string]bool, len(cs))
		for _, c := range cs {
			live[c.name] = true
			v, ok := cache[c.name]
			if !ok {
				data, _, err := g.s.get(ctx, joinPath(g.dir, c.name))
				if isNoNode(err) {
					continue // left meanwhile; the watch has fired
				}
				if err != nil {
					return snapshot[[]T]{}, err
				}
				if v, err = g.codec.Decode(data); err != nil {
					g.s.log.Warn("group: undecodable member", "path", joinPath(g.dir, c.name), "err", err)
					continue
				}
				cache[c.name] = v
			}
			list = append(list, v)
			names = append(names, c.name)
		}
		for k := range cache {
			if !live[k] {
				delete(cache, k)
			}
		}
		return snapshot[[]T]{v: list, key: strings.Join(names, "/"), watch: r.watch}, nil
	})
}

// Group members: _c_<uuid>-member-<seq> (nobody waits on anybody).
var groupMembers = &family{markers: []string{"member-"}, blockedBy: [][]bool{{false}}}
