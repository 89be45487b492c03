package runtime

// A PartitionerCache mirrors the members and the owner of each partition
// of every instance of a partitioner resource, as Partitioner.Owners
// reads them: a Cache over the member nodes (<dir>/members/*) and the
// owner nodes (<dir>/owners/p-<i>) two levels below each partitioner's
// directory, whose data it reads once when a node appears (a member's
// payload, an owner's member name) and whose states it derives in
// memory. It does not read the leader's plan (<dir>/assignment), so it
// shows who owns a partition, not who is to own it next.
//
// Its methods are LockCache's (see there), with the instance's
// PartitionerState as the value: an instance is there while it has a
// member or an owner node; Events has one event per join, leave and
// change of a partition's owner.
type PartitionerCache[K comparable, T any] struct {
	*childCache[K, []byte, PartitionerState[T]]
}

// PartitionerState is one partitioner instance as a PartitionerCache
// mirrors it.
type PartitionerState[T any] struct {
	// Members are the members in join order, as Owners lists them, each
	// with its node and decoded payload (Err wraps ErrDecode when it does
	// not decode).
	Members []GroupMember[T]
	// Owner has one entry per partition (the resource's count, as given
	// to the cache): the index in Members of its owner, or -1 while
	// nobody owns it (mid-move, its owner gone, no members) or its owner
	// node names no member held.
	Owner []int
}

// Owners returns the state as Partitioner.Owners returns it: the
// members' payloads and the owner indexes.
func (s PartitionerState[T]) Owners() PartitionOwners[T] {
	out := PartitionOwners[T]{Owner: s.Owner}
	for _, m := range s.Members {
		out.Members = append(out.Members, m.Value)
	}
	return out
}

// Unowned returns the partitions nobody owns, ascending: while members
// exist, those waiting for a hand-over.
func (s PartitionerState[T]) Unowned() []int {
	var out []int
	for i, k := range s.Owner {
		if k < 0 {
			out = append(out, i)
		}
	}
	return out
}

// NewPartitionerCache returns a cache of the partitioner instances of
// tmpl (the partitioner directories, as NewPartitioner's paths) of n
// partitions each, keyed by key(parameters), members decoded with codec.
// opts are the Cache's (WithMaxNodes bounds the member and owner nodes
// held). It holds nothing until Run; it fails only when tmpl is invalid.
func NewPartitionerCache[K comparable, T any](tmpl Template, key func(Params) K, n int, codec Codec[T], opts ...CacheOption) (*PartitionerCache[K, T], error) {
	derive := func(es []*CacheEntry[childKey[K], []byte]) (PartitionerState[T], []string) {
		return derivePartitioner(es, n, codec)
	}
	c, err := newSubtreeCache(tmpl.Str("dir").Str("node"), tmpl.Len(), key, BytesCodec(), derive, opts)
	if err != nil {
		return nil, err
	}
	return &PartitionerCache[K, T]{c}, nil
}

// derivePartitioner lists one instance's members in join order (the
// group's sequence, as Owners) and maps each owner node to its member.
// What the state shows is its members' nodes and each owner node with
// the member it names.
func derivePartitioner[K comparable, T any](es []*CacheEntry[childKey[K], []byte], n int, codec Codec[T]) (PartitionerState[T], []string) {
	members := splitByDir(es, partitionerMembers)
	byName := make(map[string]*CacheEntry[childKey[K], []byte], len(members))
	names := make([]string, 0, len(members))
	for _, e := range members {
		byName[e.Key.name] = e
		names = append(names, e.Key.name)
	}
	st := PartitionerState[T]{Owner: make([]int, n)}
	var shown []string
	index := map[string]int{}
	for _, c := range groupMembers.sortContenders(names) {
		e := byName[c.name]
		v, err := codec.Decode(e.Value)
		if err != nil {
			err = decodeError(e.Path, err)
		}
		index[c.name] = len(st.Members)
		st.Members = append(st.Members, GroupMember[T]{Node: e.Path, Value: v, Czxid: e.Stat.Czxid,
			Session: e.Stat.EphemeralOwner, Err: err})
		shown = append(shown, e.Path)
	}
	for i := range st.Owner {
		st.Owner[i] = -1
	}
	for _, e := range splitByDir(es, partitionerOwners) {
		i, ok := ownerIndex(e.Key.name, n)
		if !ok {
			continue
		}
		if k, ok := index[string(e.Value)]; ok {
			st.Owner[i] = k
		}
		shown = append(shown, e.Path+"@"+string(e.Value))
	}
	return st, shown
}
