package runtime

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestPlanPartitionsChurn drives planPartitions through random joins and
// leaves (joins append to the join order, leaves remove anyone) for several
// partition counts, and checks each plan: every partition has one owner,
// every member has ⌊n/M⌋ or ⌈n/M⌉, planning again changes nothing, and a
// single join or leave moves at most ⌈n/M⌉+1 partitions, M the larger of
// the two member counts (the stricter reading of the bound).
func TestPlanPartitionsChurn(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	worst := 0.0
	for _, n := range []int{1, 2, 3, 5, 7, 10, 16, 63, 64, 100} {
		var members []string
		plan := planPartitions(n, partitionPlan{}, nil)
		next := 0
		for step := 0; step < 2000; step++ {
			before := len(members)
			if len(members) == 0 || (len(members) < 12 && rng.IntN(2) == 0) {
				members = append(members, fmt.Sprintf("m%04d", next))
				next++
			} else {
				k := rng.IntN(len(members))
				members = append(members[:k:k], members[k+1:]...)
			}
			got := planPartitions(n, plan, members)
			checkPlan(t, n, got, members)
			if again := planPartitions(n, got, members); !again.equal(got) {
				t.Fatalf("n=%d: planning again for %v changed the plan", n, members)
			}
			moves := planMoves(plan, got)
			if before > 0 && len(members) > 0 {
				m := max(before, len(members))
				bound := (n+m-1)/m + 1
				if moves > bound {
					t.Fatalf("n=%d, %d -> %d members: %d moves, bound %d", n, before, len(members), moves, bound)
				}
				worst = max(worst, float64(moves)/float64(bound))
			}
			plan = got
		}
	}
	t.Logf("worst moves/bound: %.2f", worst)
}

func checkPlan(t *testing.T, n int, p partitionPlan, members []string) {
	t.Helper()
	count := map[string]int{}
	for i := 0; i < n; i++ {
		o := p.ownerOf(i)
		if len(members) > 0 && o == "" {
			t.Fatalf("partition %d has no owner with members %v", i, members)
		}
		count[o]++
	}
	for _, m := range members {
		if c := count[m]; c < n/len(members) || c > (n+len(members)-1)/len(members) {
			t.Fatalf("n=%d: member %s has %d partitions with %d members", n, m, c, len(members))
		}
	}
}
