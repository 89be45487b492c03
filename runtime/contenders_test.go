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
		seq, ok := parseSeq(tc.name, "lock-")
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
	got := curatorMutex.sortContenders(shuffled)
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
	got := curatorMutex.sortContenders(in)
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

func TestSeqCompare(t *testing.T) {
	if seqCompare(1, 2) != -1 || seqCompare(2, 1) != 1 || seqCompare(5, 5) != 0 {
		t.Fatal("plain order")
	}
	if seqCompare(math.MaxInt32, math.MinInt32) != -1 || seqCompare(math.MinInt32, math.MaxInt32) != 1 {
		t.Fatal("wrap order")
	}
	if seqCompare(-1, 0) != -1 || seqCompare(0, -1) != 1 {
		t.Fatal("order across zero")
	}
}

func TestFamilies(t *testing.T) {
	kids := []string{
		"_c_a-__WRIT__0000000004",
		"_c_b-__READ__0000000001",
		"_c_c-__READ__0000000002",
		"_c_d-__READ__0000000005",
		"_c_e-__WRIT__0000000003",
		"_c_f-lock-0000000000", // another family: ignored
	}
	cs := curatorRW.sortContenders(kids)
	if len(cs) != 5 {
		t.Fatalf("contenders %v", cs)
	}
	// Readers 1 and 2 hold; writer 3 waits for reader 2; writer 4 for
	// writer 3; reader 5 for the nearest lower writer, 4.
	want := []int{-1, -1, 1, 2, 3}
	for i := range cs {
		if got := curatorRW.blocker(cs, i); got != want[i] {
			t.Errorf("%s: blocker %d, want %d", cs[i].name, got, want[i])
		}
	}
	kz := kazooRW.sortContenders([]string{"ab__lock__0000000002", "cd__rlock__0000000001", "ef__rlock__0000000003"})
	if len(kz) != 3 || kz[0].kind != kindRead || kz[1].kind != kindWrite || kazooRW.blocker(kz, 2) != 1 || kazooRW.blocker(kz, 1) != 0 {
		t.Fatalf("kazoo rw: %+v", kz)
	}
	if p := kazooMutex.prefix(nil, 0); len(p) != 32+len("__lock__") {
		t.Fatalf("kazoo prefix %q", p)
	}
	if p := curatorRW.prefix(nil, kindWrite); len(p) != 3+36+1+len("__WRIT__") {
		t.Fatalf("curator prefix %q", p)
	}
}
