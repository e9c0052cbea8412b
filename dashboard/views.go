package dashboard

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/batchlet/batchlet/indexgrid"
)

// JobRow is a Job as the lists show it.
type JobRow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Status is Complete, Failed, Suspended or Running.
	Status string `json:"status"`
	// Mode is Indexed or NonIndexed.
	Mode string `json:"mode"`
	// Completions is -1 when unset (a work-queue Job).
	Completions int32      `json:"completions"`
	Parallelism int32      `json:"parallelism"`
	Active      int32      `json:"active"`
	Ready       int32      `json:"ready"`
	Succeeded   int32      `json:"succeeded"`
	Failed      int32      `json:"failed"`
	JobSet      string     `json:"jobSet,omitempty"`
	Created     time.Time  `json:"created"`
	Finished    *time.Time `json:"finished,omitempty"`
}

// JobSetRow is a JobSet as the lists show it.
type JobSetRow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Status is Completed, Failed, Suspended or Running.
	Status         string    `json:"status"`
	ReplicatedJobs int       `json:"replicatedJobs"`
	Jobs           int32     `json:"jobs"`
	Restarts       int32     `json:"restarts"`
	Created        time.Time `json:"created"`
}

// Condition is one status condition.
type Condition struct {
	Type    string    `json:"type"`
	Status  string    `json:"status"`
	Reason  string    `json:"reason,omitempty"`
	Message string    `json:"message,omitempty"`
	Time    time.Time `json:"time"`
}

// PodRow is one pod of an index's timeline.
type PodRow struct {
	Name     string     `json:"name"`
	Phase    string     `json:"phase"`
	Node     string     `json:"node,omitempty"`
	Created  time.Time  `json:"created"`
	Started  *time.Time `json:"started,omitempty"`
	Finished *time.Time `json:"finished,omitempty"`
	ExitCode *int32     `json:"exitCode,omitempty"`
	Reason   string     `json:"reason,omitempty"`
	Restarts int32      `json:"restarts"`
	// Containers name the pod's containers, for the log viewer.
	Containers []string `json:"containers"`
}

// IndexRow is one index (or, for a NonIndexed Job, one pod) of the
// timeline.
type IndexRow struct {
	Index int      `json:"index"`
	Pods  []PodRow `json:"pods"`
}

// EventRow is one event of an object.
type EventRow struct {
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Count   int32     `json:"count"`
	Last    time.Time `json:"last"`
}

// JobDetail is a Job's page.
type JobDetail struct {
	Job        JobRow      `json:"job"`
	Conditions []Condition `json:"conditions"`
	// Cells has one letter per index (or completion): p(ending),
	// r(unning), s(ucceeded), f(ailed).
	Cells string `json:"cells"`
	// Counts of the cells by state name.
	Counts map[string]int `json:"counts"`
	// FailedIndexes and CompletedIndexes are the status' interval text.
	FailedIndexes    string `json:"failedIndexes,omitempty"`
	CompletedIndexes string `json:"completedIndexes,omitempty"`
	// Timeline covers rows [From, From+len(Timeline)) of TimelineRows.
	From         int        `json:"from"`
	TimelineRows int        `json:"timelineRows"`
	Timeline     []IndexRow `json:"timeline"`
	Events       []EventRow `json:"events"`
}

// ReplicatedJobRow is one replicated Job of a JobSet.
type ReplicatedJobRow struct {
	Name      string `json:"name"`
	Replicas  int32  `json:"replicas"`
	Ready     int32  `json:"ready"`
	Active    int32  `json:"active"`
	Succeeded int32  `json:"succeeded"`
	Failed    int32  `json:"failed"`
	Suspended int32  `json:"suspended"`
}

// JobSetDetail is a JobSet's page.
type JobSetDetail struct {
	JobSet         JobSetRow          `json:"jobSet"`
	Conditions     []Condition        `json:"conditions"`
	ReplicatedJobs []ReplicatedJobRow `json:"replicatedJobs"`
	Jobs           []JobRow           `json:"jobs"`
	Events         []EventRow         `json:"events"`
}

// cellLetters are the letters of JobDetail.Cells by indexgrid.State.
var cellLetters = [4]byte{'p', 'r', 's', 'f'}

func jobRow(j *batchv1.Job) JobRow {
	r := JobRow{
		Namespace: j.Namespace, Name: j.Name, Status: jobStatus(j), Mode: string(batchv1.NonIndexedCompletion),
		Completions: -1, Parallelism: 1,
		Active: j.Status.Active, Succeeded: j.Status.Succeeded, Failed: j.Status.Failed,
		JobSet: j.Labels[jobsetv1alpha2.JobSetNameKey], Created: j.CreationTimestamp.Time,
	}
	if j.Spec.CompletionMode != nil {
		r.Mode = string(*j.Spec.CompletionMode)
	}
	if j.Spec.Completions != nil {
		r.Completions = *j.Spec.Completions
	}
	if j.Spec.Parallelism != nil {
		r.Parallelism = *j.Spec.Parallelism
	}
	if j.Status.Ready != nil {
		r.Ready = *j.Status.Ready
	}
	if t := j.Status.CompletionTime; t != nil {
		r.Finished = &t.Time
	} else if c := finishedCondition(j); c != nil {
		r.Finished = &c.LastTransitionTime.Time
	}
	return r
}

func finishedCondition(j *batchv1.Job) *batchv1.JobCondition {
	for i, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

func jobStatus(j *batchv1.Job) string {
	if c := finishedCondition(j); c != nil {
		return string(c.Type)
	}
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		return "Suspended"
	}
	return "Running"
}

func jobSetRow(js *jobsetv1alpha2.JobSet) JobSetRow {
	r := JobSetRow{Namespace: js.Namespace, Name: js.Name, Status: jobSetStatus(js), ReplicatedJobs: len(js.Spec.ReplicatedJobs),
		Restarts: js.Status.Restarts, Created: js.CreationTimestamp.Time}
	for _, rj := range js.Spec.ReplicatedJobs {
		r.Jobs += rj.Replicas
	}
	return r
}

func jobSetStatus(js *jobsetv1alpha2.JobSet) string {
	for _, c := range js.Status.Conditions {
		if c.Status != metav1.ConditionTrue {
			continue
		}
		switch jobsetv1alpha2.JobSetConditionType(c.Type) {
		case jobsetv1alpha2.JobSetCompleted, jobsetv1alpha2.JobSetFailed:
			return c.Type
		}
	}
	if js.Spec.Suspend != nil && *js.Spec.Suspend {
		return "Suspended"
	}
	return "Running"
}

// jobRows sorts by namespace, then name.
func sortRows[T any](rows []T, key func(T) (string, string)) {
	slices.SortFunc(rows, func(a, b T) int {
		an, aname := key(a)
		bn, bname := key(b)
		return cmp.Or(cmp.Compare(an, bn), cmp.Compare(aname, bname))
	})
}

// jobCells computes the grid of a Job: an Indexed Job's indexes from its
// pods and status intervals, a NonIndexed Job's completions from its
// counters (succeeded first, then active).
func jobCells(j *batchv1.Job, pods []*corev1.Pod) []indexgrid.Cell {
	row := jobRow(j)
	if row.Mode == string(batchv1.IndexedCompletion) {
		gp := make([]indexgrid.Pod, 0, len(pods))
		for _, p := range sortedPods(pods) {
			gp = append(gp, indexgrid.Pod{Name: p.Name, Index: podIndex(p), Phase: p.Status.Phase, Restarts: restarts(p), Deleted: p.DeletionTimestamp != nil})
		}
		cells := indexgrid.Cells(int(row.Completions), gp)
		indexgrid.Mark(cells, j.Status.CompletedIndexes, indexgrid.Succeeded)
		if j.Status.FailedIndexes != nil {
			indexgrid.Mark(cells, *j.Status.FailedIndexes, indexgrid.Failed)
		}
		return cells
	}
	n := int(row.Completions)
	if n < 0 {
		n = max(len(pods), int(row.Succeeded+row.Active))
	}
	cells := make([]indexgrid.Cell, n)
	for i := range cells {
		switch {
		case i < int(row.Succeeded):
			cells[i].State = indexgrid.Succeeded
		case i < int(row.Succeeded+row.Active):
			cells[i].State = indexgrid.Running
		}
	}
	return cells
}

// sortedPods orders pods by index, then creation, then name.
func sortedPods(pods []*corev1.Pod) []*corev1.Pod {
	out := slices.Clone(pods)
	slices.SortFunc(out, func(a, b *corev1.Pod) int {
		return cmp.Or(cmp.Compare(podIndex(a), podIndex(b)),
			a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// podIndex is a pod's completion index, -1 when it has none.
func podIndex(p *corev1.Pod) int {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		v, ok = p.Labels[batchv1.JobCompletionIndexAnnotation]
	}
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(v)
	if err != nil {
		return -1
	}
	return i
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}

func podRow(p *corev1.Pod) PodRow {
	r := PodRow{Name: p.Name, Phase: string(p.Status.Phase), Node: p.Spec.NodeName, Created: p.CreationTimestamp.Time,
		Reason: p.Status.Reason, Restarts: restarts(p)}
	if p.Status.StartTime != nil {
		r.Started = &p.Status.StartTime.Time
	}
	for _, c := range p.Spec.Containers {
		r.Containers = append(r.Containers, c.Name)
	}
	for _, s := range p.Status.ContainerStatuses {
		t := s.State.Terminated
		if t == nil {
			continue
		}
		if r.ExitCode == nil || t.ExitCode != 0 { // a failing container names the pod's exit
			code := t.ExitCode
			r.ExitCode = &code
			if r.Reason == "" || t.ExitCode != 0 {
				r.Reason = t.Reason
			}
		}
		if r.Finished == nil || t.FinishedAt.After(*r.Finished) {
			at := t.FinishedAt.Time
			r.Finished = &at
		}
	}
	return r
}

// timeline groups a Job's pods into rows [from, from+count): by index for
// an Indexed Job, one row per pod (by creation) otherwise. total is the
// number of rows there are.
func timeline(j *batchv1.Job, pods []*corev1.Pod, from, count int) (rows []IndexRow, total int) {
	rows = []IndexRow{}
	sorted := sortedPods(pods)
	if jobRow(j).Mode != string(batchv1.IndexedCompletion) {
		total = len(sorted)
		for i := from; i < min(from+count, total); i++ {
			rows = append(rows, IndexRow{Index: i, Pods: []PodRow{podRow(sorted[i])}})
		}
		return rows, total
	}
	total = max(int(jobRow(j).Completions), 0)
	end := min(from+count, total)
	for i := from; i < end; i++ {
		rows = append(rows, IndexRow{Index: i, Pods: []PodRow{}})
	}
	for _, p := range sorted {
		if i := podIndex(p); i >= from && i < end {
			rows[i-from].Pods = append(rows[i-from].Pods, podRow(p))
		}
	}
	return rows, total
}

// eventRows are the newest events first, at most limit.
func eventRows(events []*corev1.Event, limit int) []EventRow {
	rows := make([]EventRow, 0, len(events))
	for _, e := range events {
		last := e.LastTimestamp.Time
		if last.IsZero() {
			last = e.EventTime.Time
		}
		if last.IsZero() {
			last = e.CreationTimestamp.Time
		}
		rows = append(rows, EventRow{Type: e.Type, Reason: e.Reason, Message: e.Message, Count: max(e.Count, 1), Last: last})
	}
	slices.SortStableFunc(rows, func(a, b EventRow) int {
		return cmp.Or(b.Last.Compare(a.Last), cmp.Compare(a.Reason, b.Reason), cmp.Compare(a.Message, b.Message))
	})
	return rows[:min(len(rows), limit)]
}

func jobConditions(j *batchv1.Job) []Condition {
	out := make([]Condition, 0, len(j.Status.Conditions))
	for _, c := range j.Status.Conditions {
		out = append(out, Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message, Time: c.LastTransitionTime.Time})
	}
	return out
}

func jobSetConditions(js *jobsetv1alpha2.JobSet) []Condition {
	out := make([]Condition, 0, len(js.Status.Conditions))
	for _, c := range js.Status.Conditions {
		out = append(out, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message, Time: c.LastTransitionTime.Time})
	}
	return out
}

// timelineRows is how many timeline rows a Job page shows at once.
const timelineRows = 50

// eventLimit is how many events a page shows.
const eventLimit = 100

func (s *store) jobDetail(j *batchv1.Job, from int) JobDetail {
	pods := s.podsOf(j)
	cells := jobCells(j, pods)
	letters := make([]byte, len(cells))
	counts := map[string]int{}
	for st := range cellLetters {
		counts[indexgrid.State(st).String()] = 0
	}
	for i, c := range cells {
		letters[i] = cellLetters[c.State]
		counts[c.State.String()]++
	}
	d := JobDetail{Job: jobRow(j), Conditions: jobConditions(j), Cells: string(letters), Counts: counts,
		CompletedIndexes: j.Status.CompletedIndexes,
		Events:           eventRows(s.eventsOf(j, "Job"), eventLimit)}
	if j.Status.FailedIndexes != nil {
		d.FailedIndexes = *j.Status.FailedIndexes
	}
	d.Timeline, d.TimelineRows = timeline(j, pods, max(from, 0), timelineRows)
	d.From = max(from, 0)
	return d
}

func (s *store) jobSetDetail(js *jobsetv1alpha2.JobSet) JobSetDetail {
	d := JobSetDetail{JobSet: jobSetRow(js), Conditions: jobSetConditions(js), ReplicatedJobs: []ReplicatedJobRow{}, Jobs: []JobRow{},
		Events: eventRows(s.eventsOf(js, "JobSet"), eventLimit)}
	status := map[string]jobsetv1alpha2.ReplicatedJobStatus{}
	for _, st := range js.Status.ReplicatedJobsStatus {
		status[st.Name] = st
	}
	for _, rj := range js.Spec.ReplicatedJobs {
		st := status[rj.Name]
		d.ReplicatedJobs = append(d.ReplicatedJobs, ReplicatedJobRow{Name: rj.Name, Replicas: rj.Replicas,
			Ready: st.Ready, Active: st.Active, Succeeded: st.Succeeded, Failed: st.Failed, Suspended: st.Suspended})
	}
	for _, j := range s.jobsOf(js) {
		d.Jobs = append(d.Jobs, jobRow(j))
	}
	sortRows(d.Jobs, func(r JobRow) (string, string) { return r.Namespace, r.Name })
	return d
}
