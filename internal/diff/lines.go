package diff

import (
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// maxLineIDs is how many distinct lines lines can tell apart: one rune
// each, surrogates excluded.
const maxLineIDs = utf8.MaxRune + 1 - (0xE000 - 0xD800)

// lines returns a shortest edit script from a to b, in order, with the
// deletions of a change before its insertions. The diff itself is
// diffmatchpatch's (Myers' algorithm, without a deadline, so it is never
// cut short) over one rune per distinct line.
func lines(a, b []string) []edit {
	ids := make(map[string]rune, len(a)+len(b))
	intern := func(ls []string) []rune {
		out := make([]rune, len(ls))
		for i, l := range ls {
			id, ok := ids[l]
			if !ok {
				id = lineRune(len(ids))
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	ra, rb := intern(a), intern(b)
	if len(ids) > maxLineIDs {
		return replaceAll(len(a), len(b))
	}
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 0 // no deadline: always a shortest script
	script := make([]edit, 0, max(len(a), len(b)))
	i, j := 0, 0
	var inserts []edit // of the current change, after its deletions
	for _, d := range dmp.DiffMainRunes(ra, rb, false) {
		n := utf8.RuneCountInString(d.Text)
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			for ; n > 0; n-- {
				script = append(script, edit{opDelete, i, j})
				i++
			}
		case diffmatchpatch.DiffInsert:
			for ; n > 0; n-- {
				inserts = append(inserts, edit{opInsert, -1, j})
				j++
			}
		case diffmatchpatch.DiffEqual:
			script = flush(script, inserts, i)
			inserts = inserts[:0]
			for ; n > 0; n-- {
				script = append(script, edit{opEqual, i, j})
				i++
				j++
			}
		}
	}
	return flush(script, inserts, i)
}

// flush appends the insertions of a change, which come before old line i.
func flush(script, inserts []edit, i int) []edit {
	for _, e := range inserts {
		script = append(script, edit{opInsert, i, e.b})
	}
	return script
}

// lineRune is the rune standing for the id-th distinct line: ids count up
// from 0, skipping the surrogates, which a Go string cannot hold.
func lineRune(id int) rune {
	if id >= 0xD800 {
		id += 0xE000 - 0xD800
	}
	return rune(id)
}

// replaceAll is the script that deletes all n old lines and inserts all m
// new ones: for texts with more distinct lines than runes, far beyond any
// generated file.
func replaceAll(n, m int) []edit {
	script := make([]edit, 0, n+m)
	for i := range n {
		script = append(script, edit{opDelete, i, 0})
	}
	for j := range m {
		script = append(script, edit{opInsert, n, j})
	}
	return script
}
