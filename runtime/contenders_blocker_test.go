package runtime

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// place agrees with blocker over sortContenders, for every
// family, on random queues: mixed kinds, foreign names, equal sequence
// numbers and numbers across the int32 wrap.
func TestPlaceMatchesSort(t *testing.T) {
	fams := map[string]*family{"curatorMutex": curatorMutex, "kazooMutex": kazooMutex,
		"curatorRW": curatorRW, "kazooRW": kazooRW, "curatorLatch": curatorLatch}
	r := rand.New(rand.NewPCG(1, 2))
	for fname, f := range fams {
		for round := 0; round < 300; round++ {
			base := int32(r.Uint32())
			n := 1 + r.IntN(12)
			var kids []string
			for i := 0; i < n; i++ {
				seq := base + int32(r.IntN(2*n)) // duplicates and the wrap happen
				m := f.markers[r.IntN(len(f.markers))]
				kids = append(kids, fmt.Sprintf("p%d-%s%s", r.IntN(3), m, seqText(seq)))
			}
			if r.IntN(3) == 0 {
				kids = append(kids, "foreign-node")
			}
			kids = dedupe(kids)
			name := kids[r.IntN(len(kids))]
			cs := f.sortContenders(kids)
			i := indexOf(cs, name)
			want, wantFound := "", i >= 0
			if i >= 0 {
				if b := f.blocker(cs, i); b >= 0 {
					want = cs[b].name
				}
			}
			p := f.place(kids, name)
			if p.blocker != want || p.found != wantFound {
				t.Fatalf("%s: place(%v, %q) = %+v; sorted: blocker %q, found %v", fname, kids, name, p, want, wantFound)
			}
			if p.found && (p.first != firstBlocker(f, cs, i) || p.later != (i < len(cs)-1)) {
				t.Fatalf("%s: place(%v, %q) = %+v; sorted: first %v, later %v", fname, kids, name, p, firstBlocker(f, cs, i), i < len(cs)-1)
			}
		}
	}
}

// firstBlocker is place.first over the sorted contenders cs: cs[i] has a
// blocker, and no node before that blocker is of a kind that blocks cs[i].
func firstBlocker(f *family, cs []contender, i int) bool {
	b := f.blocker(cs, i)
	if b < 0 {
		return false
	}
	for j := 0; j < b; j++ {
		if f.blockedBy[cs[i].kind][cs[j].kind] {
			return false
		}
	}
	return true
}

// seqText writes seq as ZooKeeper does: 10 digits, a minus sign past the
// wrap.
func seqText(seq int32) string {
	if seq < 0 {
		return fmt.Sprintf("-%010d", -int64(seq))
	}
	return fmt.Sprintf("%010d", seq)
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
