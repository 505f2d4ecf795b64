package replay

import (
	"fmt"
	"strings"
)

// diffContext is how many unchanged lines a hunk shows around a change.
const diffContext = 3

// maxDiffCells bounds the work of the line matching: beyond it (after the
// common head and tail are cut) the differing middle is shown as one
// removal and one addition instead of a minimal diff.
const maxDiffCells = 4 << 20

// op is one line of an edit script.
type op struct {
	kind byte // ' ', '-' or '+'
	text string
}

// UnifiedDiff returns a unified diff (as diff -u prints it, with hunk
// headers) turning a into b, compared line by line; "" when they are equal.
// A last line without a newline is marked "\ No newline at end of file",
// as diff does; model texts usually end that way.
func UnifiedDiff(fromName, toName, a, b string) string {
	if a == b {
		return ""
	}
	al, bl := splitLines(a), splitLines(b)
	ops := editScript(al, bl)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", fromName, toName)
	// Walk the script, cutting it into hunks of changes with context.
	i := 0
	for i < len(ops) {
		// Find the next change.
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(i-diffContext, 0)
		// Extend while changes are within 2*context of each other.
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*diffContext {
				end = min(end+diffContext, len(ops))
				break
			}
			end = run
		}
		writeHunk(&out, ops, start, end)
		i = end
	}
	return out.String()
}

func writeHunk(out *strings.Builder, ops []op, start, end int) {
	// Line numbers of the hunk's first line in a and b.
	aLine, bLine := 1, 1
	for _, o := range ops[:start] {
		if o.kind != '+' {
			aLine++
		}
		if o.kind != '-' {
			bLine++
		}
	}
	aCount, bCount := 0, 0
	for _, o := range ops[start:end] {
		if o.kind != '+' {
			aCount++
		}
		if o.kind != '-' {
			bCount++
		}
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(aLine, aCount), hunkRange(bLine, bCount))
	for _, o := range ops[start:end] {
		out.WriteByte(o.kind)
		out.WriteString(o.text)
		if !strings.HasSuffix(o.text, "\n") {
			out.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

func hunkRange(line, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", line-1)
	case 1:
		return fmt.Sprintf("%d", line)
	}
	return fmt.Sprintf("%d,%d", line, count)
}

// splitLines splits s after each newline; a last line without one is kept
// as it is, so "x" and "x\n" differ in their last line.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	ls := strings.SplitAfter(s, "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

// LineEdits is a shortest edit script from lines a to lines b, one byte
// per line of the script: ' ' kept, '-' removed (a's next line), '+'
// added (b's next line); deletions come before insertions within a
// change, and past the diff's bound the lines between the common head and
// tail are all removed, then all added. The side-by-side diff of the
// console pairs its lines from it.
func LineEdits(a, b []string) []byte {
	ops := editScript(a, b)
	out := make([]byte, len(ops))
	for i, o := range ops {
		out[i] = o.kind
	}
	return out
}

// editScript computes a shortest edit script with a longest common
// subsequence table over the lines that differ between the common head and
// tail. Deletions come before insertions within a change.
func editScript(a, b []string) []op {
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	ops := make([]op, 0, len(a)+len(b))
	for _, l := range a[:head] {
		ops = append(ops, op{' ', l})
	}
	am, bm := a[head:len(a)-tail], b[head:len(b)-tail]
	n, m := len(am), len(bm)
	if n*m > maxDiffCells {
		for _, l := range am {
			ops = append(ops, op{'-', l})
		}
		for _, l := range bm {
			ops = append(ops, op{'+', l})
		}
	} else {
		// lcs[i][j] = LCS length of am[i:] and bm[j:].
		w := m + 1
		lcs := make([]int32, (n+1)*w)
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if am[i] == bm[j] {
					lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
				} else {
					lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
				}
			}
		}
		i, j := 0, 0
		var adds []op
		flush := func() {
			ops = append(ops, adds...)
			adds = adds[:0]
		}
		for i < n || j < m {
			switch {
			case i < n && j < m && am[i] == bm[j]:
				flush()
				ops = append(ops, op{' ', am[i]})
				i++
				j++
			case j == m || (i < n && lcs[(i+1)*w+j] >= lcs[i*w+j+1]):
				ops = append(ops, op{'-', am[i]})
				i++
			default:
				adds = append(adds, op{'+', bm[j]})
				j++
			}
		}
		flush()
	}
	for _, l := range a[len(a)-tail:] {
		ops = append(ops, op{' ', l})
	}
	return ops
}
