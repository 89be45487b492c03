package diff

// lines returns a shortest edit script from a to b, in order, with the
// deletions of a change before its insertions.
func lines(a, b []string) []edit {
	// Compare small integers instead of strings: equal lines get equal ids.
	ids := make(map[string]int, len(a)+len(b))
	intern := func(ls []string) []int {
		out := make([]int, len(ls))
		for i, l := range ls {
			id, ok := ids[l]
			if !ok {
				id = len(ids)
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	d := &differ{
		a:    intern(a),
		b:    intern(b),
		delA: make([]bool, len(a)),
		insB: make([]bool, len(b)),
	}
	d.compare(0, len(a), 0, len(b))

	script := make([]edit, 0, max(len(a), len(b)))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && d.delA[i]:
			script = append(script, edit{opDelete, i, j})
			i++
		case j < len(b) && d.insB[j]:
			script = append(script, edit{opInsert, i, j})
			j++
		default:
			script = append(script, edit{opEqual, i, j})
			i++
			j++
		}
	}
	return script
}

// differ holds the two sequences and marks which lines of a are deleted and
// which lines of b are inserted; every other line is common to both.
type differ struct {
	a, b       []int
	delA, insB []bool
	vf, vb     []int // scratch for middleSnake, indexed by diagonal
}

// compare marks a shortest edit script between a[aLo:aHi] and b[bLo:bHi].
func (d *differ) compare(aLo, aHi, bLo, bHi int) {
	for aLo < aHi && bLo < bHi && d.a[aLo] == d.b[bLo] {
		aLo++
		bLo++
	}
	for aLo < aHi && bLo < bHi && d.a[aHi-1] == d.b[bHi-1] {
		aHi--
		bHi--
	}
	switch {
	case aLo == aHi:
		for j := bLo; j < bHi; j++ {
			d.insB[j] = true
		}
		return
	case bLo == bHi:
		for i := aLo; i < aHi; i++ {
			d.delA[i] = true
		}
		return
	}
	x0, y0, x1, y1 := d.middleSnake(aLo, aHi, bLo, bHi)
	if (x0 == aLo && y0 == bLo && x1 == aHi && y1 == bHi) ||
		(x0 == aHi && y0 == bHi) || (x1 == aLo && y1 == bLo) {
		// Cannot happen after trimming (the script has at least two edits,
		// so both halves are smaller); guard against endless recursion.
		for i := aLo; i < aHi; i++ {
			d.delA[i] = true
		}
		for j := bLo; j < bHi; j++ {
			d.insB[j] = true
		}
		return
	}
	d.compare(aLo, x0, bLo, y0)
	d.compare(x1, aHi, y1, bHi)
}

// middleSnake finds the middle snake of a shortest edit script between
// a[aLo:aHi] and b[bLo:bHi] (Myers 1986, section 4b): a run of equal lines
// from (x0, y0) to (x1, y1), in absolute indexes, that lies on a shortest
// path and splits it into two halves of about equal cost.
func (d *differ) middleSnake(aLo, aHi, bLo, bHi int) (x0, y0, x1, y1 int) {
	n, m := aHi-aLo, bHi-bLo
	delta := n - m
	odd := delta&1 != 0
	maxD := (n + m + 1) / 2
	// vf[off+k] is the furthest x reached on diagonal k = x-y going forward;
	// vb[off+k] is the furthest distance from the end reached on diagonal
	// k = (n-x)-(m-y) going backward.
	off := maxD + 1
	size := 2*maxD + 3
	if cap(d.vf) < size {
		d.vf, d.vb = make([]int, size), make([]int, size)
	}
	vf, vb := d.vf[:size], d.vb[:size]
	vf[off+1], vb[off+1] = 0, 0
	for D := 0; D <= maxD; D++ {
		for k := -D; k <= D; k += 2 {
			var x int
			if k == -D || (k != D && vf[off+k-1] < vf[off+k+1]) {
				x = vf[off+k+1] // down: insert
			} else {
				x = vf[off+k-1] + 1 // right: delete
			}
			y := x - k
			sx, sy := x, y
			for x < n && y < m && d.a[aLo+x] == d.b[bLo+y] {
				x++
				y++
			}
			vf[off+k] = x
			if kb := delta - k; odd && kb >= -(D-1) && kb <= D-1 && x+vb[off+kb] >= n {
				return aLo + sx, bLo + sy, aLo + x, bLo + y
			}
		}
		for k := -D; k <= D; k += 2 {
			var x int
			if k == -D || (k != D && vb[off+k-1] < vb[off+k+1]) {
				x = vb[off+k+1]
			} else {
				x = vb[off+k-1] + 1
			}
			y := x - k
			sx, sy := x, y
			for x < n && y < m && d.a[aHi-1-x] == d.b[bHi-1-y] {
				x++
				y++
			}
			vb[off+k] = x
			if kf := delta - k; !odd && kf >= -D && kf <= D && x+vf[off+kf] >= n {
				return aHi - x, bHi - y, aHi - sx, bHi - sy
			}
		}
	}
	panic("diff: no middle snake") // unreachable: a path of cost n+m always exists
}
