package runtime

import (
	"encoding/json"
	"slices"
)

// partitionPlan is a partitioner's target assignment, published by its
// leader (the member that joined first) in <dir>/assignment: the members it
// was computed for, in join order, and for each partition the index of the
// member that should own it (-1: nobody, when there are no members).
type partitionPlan struct {
	Members []string `json:"members"`
	Owner   []int    `json:"owner"`
}

// ownerOf returns the member node name planned to own partition i, or "".
func (p partitionPlan) ownerOf(i int) string {
	if i >= len(p.Owner) || p.Owner[i] < 0 || p.Owner[i] >= len(p.Members) {
		return ""
	}
	return p.Members[p.Owner[i]]
}

// partitionsOf returns the partitions planned for member, ascending.
func (p partitionPlan) partitionsOf(member string) []int {
	var out []int
	for i := range p.Owner {
		if p.ownerOf(i) == member {
			out = append(out, i)
		}
	}
	return out
}

// equal reports whether p and q plan the same members and owners.
func (p partitionPlan) equal(q partitionPlan) bool {
	return slices.Equal(p.Members, q.Members) && slices.Equal(p.Owner, q.Owner)
}

func (p partitionPlan) encode() []byte {
	b, _ := json.Marshal(p) // slices of strings and ints: cannot fail
	return b
}

// decodePlan reads a published plan; anything unreadable is no plan.
func decodePlan(data []byte) partitionPlan {
	var p partitionPlan
	if json.Unmarshal(data, &p) != nil {
		return partitionPlan{}
	}
	return p
}

// planPartitions computes the target assignment of n partitions to members
// (member node names in join order) from the previous plan. It is a pure
// function, so every member computes the same plan from the same inputs,
// and it is:
//
//   - balanced: with M members, the first n%M in join order are given
//     ⌈n/M⌉ partitions and the others ⌊n/M⌋;
//   - sticky: a member keeps the partitions the previous plan gave it, its
//     lowest-numbered ones, up to its quota; only the rest (partitions of
//     members that are gone, a member's excess over its new quota) are
//     dealt out again, ascending, to the members below their quota, in join
//     order. A join therefore moves only the new member's share, and a
//     leave the leaver's share (plus at most one partition when the
//     quotas shift between ranks), never all;
//   - idempotent: planning again for the same members changes nothing.
func planPartitions(n int, prev partitionPlan, members []string) partitionPlan {
	plan := partitionPlan{Members: slices.Clone(members), Owner: make([]int, n)}
	m := len(members)
	if m == 0 {
		for i := range plan.Owner {
			plan.Owner[i] = -1
		}
		return plan
	}
	rank := make(map[string]int, m)
	for k, name := range members {
		rank[name] = k
	}
	quota := make([]int, m)
	for k := range quota {
		quota[k] = n / m
		if k < n%m {
			quota[k]++
		}
	}
	count := make([]int, m)
	var pool []int
	for i := range plan.Owner {
		k, ok := rank[prev.ownerOf(i)]
		if ok && count[k] < quota[k] {
			plan.Owner[i] = k
			count[k]++
			continue
		}
		pool = append(pool, i)
	}
	for k := range quota {
		for ; count[k] < quota[k]; count[k]++ {
			plan.Owner[pool[0]] = k
			pool = pool[1:]
		}
	}
	return plan
}

// planMoves counts the partitions whose planned owner differs between a
// and b (a partition planned for nobody in a is not counted: it moves from
// nobody).
func planMoves(a, b partitionPlan) int {
	moves := 0
	for i := range b.Owner {
		if was := a.ownerOf(i); was != "" && was != b.ownerOf(i) {
			moves++
		}
	}
	return moves
}
