package runtime

import (
	"slices"
	"testing"
)

// mergeJoined keeps join (creation zxid) order whatever the interleaving of
// the cached members and the new ones.
func TestMergeJoined(t *testing.T) {
	e := func(zs ...int64) []*groupEntry[int] {
		out := make([]*groupEntry[int], 0, len(zs)+2)
		for _, z := range zs {
			out = append(out, &groupEntry[int]{zxid: z, v: int(z)})
		}
		return out
	}
	for _, c := range []struct{ a, b, want []int64 }{
		{nil, nil, nil},
		{[]int64{1, 2}, nil, []int64{1, 2}},
		{nil, []int64{3}, []int64{3}},
		{[]int64{1, 2}, []int64{3, 4}, []int64{1, 2, 3, 4}},
		{[]int64{3, 4}, []int64{1, 2}, []int64{1, 2, 3, 4}},
		{[]int64{1, 4, 6}, []int64{2, 5, 7}, []int64{1, 2, 4, 5, 6, 7}},
	} {
		var got []int64
		for _, m := range mergeJoined(e(c.a...), e(c.b...)) {
			got = append(got, m.zxid)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("mergeJoined(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
