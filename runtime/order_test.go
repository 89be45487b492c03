package runtime

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func TestParseSeq(t *testing.T) {
	for _, tc := range []struct {
		name string
		seq  int32
		ok   bool
	}{
		{"_c_6b1c8b1e-1f0a-4b7e-9a51-2f1e2d3c4b5a-lock-0000000007", 7, true},
		{"lock-0000000000", 0, true},
		{"x-lock-2147483647", math.MaxInt32, true},
		{"x-lock--2147483648", math.MinInt32, true},
		{"x-lock--000000001", -1, true},
		{"readme", 0, false},
		{"lock-12", 0, false},          // not a sequence suffix
		{"lock-000000000x", 0, false},  // not a number
		{"lock-99999999999", 0, false}, // out of int32
		{"_c_abc-latch-0000000001", 0, false},
	} {
		seq, ok := parseSeq(tc.name, lockMarker)
		if seq != tc.seq || ok != tc.ok {
			t.Errorf("parseSeq(%q) = %d, %v; want %d, %v", tc.name, seq, ok, tc.seq, tc.ok)
		}
	}
}

func seqName(prefix string, seq int32) string {
	return fmt.Sprintf("%slock-%010d", prefix, seq)
}

func TestSortContendersAcrossWrap(t *testing.T) {
	// The parent's counter went 2147483646, 2147483647, then wrapped.
	order := []string{
		seqName("_c_a-", math.MaxInt32-1),
		seqName("_c_b-", math.MaxInt32),
		seqName("_c_c-", math.MinInt32),
		seqName("_c_d-", math.MinInt32+1),
	}
	shuffled := []string{order[2], "not-a-lock-node", order[0], order[3], order[1], "lock-foo"}
	got := sortContenders(shuffled, lockMarker)
	var names []string
	for _, c := range got {
		names = append(names, c.name)
	}
	if !slices.Equal(names, order) {
		t.Fatalf("order across the wrap:\n got %v\nwant %v", names, order)
	}
}

func TestSortContendersPlain(t *testing.T) {
	in := []string{seqName("_c_z-", 12), seqName("_c_a-", 3), seqName("", 10), seqName("_c_m-", 0)}
	got := sortContenders(in, lockMarker)
	want := []int32{0, 3, 10, 12}
	for i, c := range got {
		if c.seq != want[i] {
			t.Fatalf("position %d: seq %d, want %d", i, c.seq, want[i])
		}
	}
	if indexOf(got, in[0]) != 3 || indexOf(got, "nope") != -1 {
		t.Fatal("indexOf")
	}
}

func TestSeqBefore(t *testing.T) {
	if !seqBefore(1, 2) || seqBefore(2, 1) || seqBefore(5, 5) {
		t.Fatal("plain order")
	}
	if !seqBefore(math.MaxInt32, math.MinInt32) || seqBefore(math.MinInt32, math.MaxInt32) {
		t.Fatal("wrap order")
	}
}
