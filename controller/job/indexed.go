package job

import (
	"math"
	"slices"
	"strconv"
	"strings"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
)

const (
	completionIndexEnvName = "JOB_COMPLETION_INDEX"
	unknownIndex           = -1
)

// span is a closed range of completion indexes [first, last].
type span struct{ first, last int }

// indexSet is an ordered list of disjoint, non-adjacent spans: the in-memory
// form of status.completedIndexes and status.failedIndexes.
type indexSet []span

func isIndexed(job *batch.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batch.IndexedCompletion
}

func completionModeOf(job *batch.Job) string {
	if isIndexed(job) {
		return string(batch.IndexedCompletion)
	}
	return string(batch.NonIndexedCompletion)
}

// parseIndexSet reads the interval text the way the controller does: corrupt
// fragments are skipped, parsing stops at the first interval at or beyond
// completions, ends are clamped to completions-1, adjacent spans merge. A
// fragment is "first" or "first-last" (anything after a second "-" is
// ignored). It walks the text in place: a long completedIndexes is parsed
// on every sync of its Job.
func parseIndexSet(text string, completions int) indexSet {
	if text == "" {
		return nil
	}
	out := make(indexSet, 0, strings.Count(text, ",")+1)
	for rest, more := text, true; more; {
		var frag string
		frag, rest, more = strings.Cut(rest, ",")
		firstText, lastText, isRange := strings.Cut(frag, "-")
		first, err := strconv.Atoi(firstText)
		if err != nil {
			continue
		}
		if first >= completions {
			break
		}
		last := first
		if isRange {
			lastText, _, _ = strings.Cut(lastText, "-")
			if last, err = strconv.Atoi(lastText); err != nil {
				continue
			}
			last = min(last, completions-1)
		}
		if n := len(out); n > 0 && out[n-1].last == first-1 {
			out[n-1].last = last
			continue
		}
		out = append(out, span{first, last})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// String writes the interval text: runs of three or more as "a-b", a run of
// two as "a,b".
func (s indexSet) String() string {
	if len(s) == 0 {
		return ""
	}
	b := make([]byte, 0, len(s)*16)
	for _, sp := range s {
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(sp.first), 10)
		switch {
		case sp.last == sp.first+1:
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(sp.last), 10)
		case sp.last > sp.first+1:
			b = append(b, '-')
			b = strconv.AppendInt(b, int64(sp.last), 10)
		}
	}
	return string(b)
}

func (s indexSet) total() int {
	n := 0
	for _, sp := range s {
		n += sp.last - sp.first + 1
	}
	return n
}

func (s indexSet) has(ix int) bool {
	i, _ := slices.BinarySearchFunc(s, ix, func(sp span, t int) int {
		if sp.last < t {
			return -1
		}
		if sp.first > t {
			return 1
		}
		return 0
	})
	return i < len(s) && s[i].first <= ix && ix <= s[i].last
}

// union returns the merged set of s and o.
func (s indexSet) union(o indexSet) indexSet {
	all := make(indexSet, 0, len(s)+len(o))
	all = append(append(all, s...), o...)
	slices.SortFunc(all, func(a, b span) int { return a.first - b.first })
	var out indexSet
	for _, sp := range all {
		if n := len(out); n > 0 && sp.first <= out[n-1].last+1 {
			out[n-1].last = max(out[n-1].last, sp.last)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// withIndexes returns s plus the given indexes. When s is canonical and ixs
// ascending, as on every sync, it merges the two in one pass; otherwise
// (a corrupt status text) union sorts.
func (s indexSet) withIndexes(ixs []int) indexSet {
	if !s.canonical() || !slices.IsSorted(ixs) {
		o := make(indexSet, 0, len(ixs))
		for _, ix := range ixs {
			o = append(o, span{ix, ix})
		}
		return s.union(o)
	}
	out := make(indexSet, 0, len(s)+len(ixs))
	add := func(sp span) {
		if n := len(out); n > 0 && sp.first <= out[n-1].last+1 {
			out[n-1].last = max(out[n-1].last, sp.last)
			return
		}
		out = append(out, sp)
	}
	i := 0
	for _, sp := range s {
		for ; i < len(ixs) && ixs[i] < sp.first; i++ {
			add(span{ixs[i], ixs[i]})
		}
		add(sp)
	}
	for ; i < len(ixs); i++ {
		add(span{ixs[i], ixs[i]})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// canonical: spans ascending, each first <= last, disjoint and not
// adjacent; the form union and parseIndexSet of a well-formed text give.
func (s indexSet) canonical() bool {
	for i, sp := range s {
		if sp.first > sp.last || (i > 0 && sp.first <= s[i-1].last+1) {
			return false
		}
	}
	return true
}

// podIndex reads the completion index annotation; invalid values are unknown.
func podIndex(p *v1.Pod) int {
	v, ok := p.Annotations[batch.JobCompletionIndexAnnotation]
	if !ok {
		return unknownIndex
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 {
		return unknownIndex
	}
	return i
}

func indexesOf(pods []*v1.Pod) []int {
	var out []int
	for _, p := range pods {
		if ix := podIndex(p); ix != unknownIndex {
			out = append(out, ix)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// knownIndexes is indexesOf for indexes read already: ixs without
// unknownIndex, sorted, without repeats, in a new slice.
func knownIndexes(ixs []int) []int {
	out := make([]int, 0, len(ixs))
	for _, ix := range ixs {
		if ix != unknownIndex {
			out = append(out, ix)
		}
	}
	if !slices.IsSorted(out) {
		slices.Sort(out)
	}
	return slices.Compact(out)
}

// firstPendingIndexes returns up to count of the lowest indexes below
// completions that are not in any of the busy sets.
func firstPendingIndexes(busy indexSet, count, completions int) []int {
	var out []int
	next := 0
	for _, sp := range busy {
		for ; next < sp.first && next < completions && len(out) < count; next++ {
			out = append(out, next)
		}
		next = max(next, sp.last+1)
	}
	for ; next < completions && len(out) < count; next++ {
		out = append(out, next)
	}
	return out
}

// duplicateIndexPodsForRemoval splits active pods of an Indexed Job into the
// pods that must go (no index, index out of range, all but the most active
// pod of a repeated index) and the rest; indexes[i] is the completion index
// of pods[i]. It runs on every sync of an Indexed Job, so it sorts one slice
// by index rather than grouping in a map, and not at all when the pods come
// in index order (as syncState's do); pods keeps its order.
func duplicateIndexPodsForRemoval(pods []*v1.Pod, indexes []int, completions int) (rm, keep []*v1.Pod) {
	valid := make([]trackedPod, 0, len(pods))
	for i, p := range pods {
		ix := indexes[i]
		if ix == unknownIndex || ix >= completions {
			rm = append(rm, p)
			continue
		}
		valid = append(valid, trackedPod{pod: p, index: ix, seq: len(valid)})
	}
	// The pods of one index stay in input order before sortActivePods.
	if !slices.IsSortedFunc(valid, byIndex) {
		slices.SortFunc(valid, byIndex)
	}
	keep = make([]*v1.Pod, 0, len(valid))
	for start := 0; start < len(valid); {
		end := start + 1
		for end < len(valid) && valid[end].index == valid[start].index {
			end++
		}
		if end-start == 1 {
			keep = append(keep, valid[start].pod)
			start = end
			continue
		}
		group := make([]*v1.Pod, 0, end-start)
		for _, tp := range valid[start:end] {
			group = append(group, tp.pod)
		}
		sortActivePods(group)
		rm = append(rm, group[:len(group)-1]...)
		keep = append(keep, group[len(group)-1])
		start = end
	}
	return rm, keep
}

// podGenerateNameWithIndex is "<job>-<index>-", with the job name cut so the
// prefix fits the generated-name limit.
func podGenerateNameWithIndex(jobName string, index int) string {
	suffix := "-" + strconv.Itoa(index) + "-"
	prefix := jobName + suffix
	if len(prefix) > maxGeneratedNameLength {
		prefix = jobName[:maxGeneratedNameLength-len(suffix)] + suffix
	}
	return prefix
}

// annotationCount reads a non-negative int32 annotation; anything else is 0.
func annotationCount(p *v1.Pod, key string) int32 {
	v, ok := p.Annotations[key]
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > math.MaxInt32 {
		return 0
	}
	return int32(n)
}

func indexFailureCount(p *v1.Pod) int32 {
	return annotationCount(p, batch.JobIndexFailureCountAnnotation)
}

func indexIgnoredFailureCount(p *v1.Pod) int32 {
	return annotationCount(p, batch.JobIndexIgnoredFailureCountAnnotation)
}

func indexAbsoluteFailureCount(p *v1.Pod) int32 {
	return indexFailureCount(p) + indexIgnoredFailureCount(p)
}
