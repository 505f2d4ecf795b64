package bench

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

// ScaleGoalUnchanged is what an unchanged pre-step at a fleet's skill
// count may cost at most, as a multiple of its cost at the reference
// count (p50 against p50).
const ScaleGoalUnchanged = 1.25

// ScaleReport is the result of `bench --scale`: a skill store of a
// fleet's size and a small reference store, each pushed as `skills push`
// pushes, then read and served by a fresh `serve` member, measured alike
// in one run. --json prints it as is.
type ScaleReport struct {
	Machine Machine `json:"machine"`
	// Encoding of the triggers and answers.
	Encoding string `json:"encoding"`
	// FreshSessions is how many new sessions were timed for the catalog
	// decision, Samples how many unchanged pre-steps and skill calls.
	FreshSessions int `json:"fresh_sessions"`
	Samples       int `json:"samples"`
	// Runs holds the fleet-sized store first, then the reference.
	Runs []ScaleRun `json:"runs"`
	// Ratios are the fleet's figures over the reference's:
	// unchanged_p50, skill_call_p50, catalog_p50, member_peak_rss.
	Ratios map[string]float64 `json:"ratios,omitempty"`
	// GoalUnchanged is ScaleGoalUnchanged; UnchangedGoalMet says whether
	// ratios.unchanged_p50 is within it.
	GoalUnchanged    float64 `json:"unchanged_p50_goal"`
	UnchangedGoalMet bool    `json:"unchanged_p50_goal_met"`
}

// ScaleRun is one store size's figures.
type ScaleRun struct {
	Skills int         `json:"skills"`
	Push   ScalePush   `json:"push"`
	Member ScaleMember `json:"member"`
	// Catalog: the first pre-step of fresh sessions (the catalog
	// appended), on a settled member.
	Catalog ScaleCatalog `json:"catalog"`
	// Unchanged: pre-steps of one session whose catalog is current, one
	// at a time; SkillCall: tool.call.skill of one store skill, one at a
	// time.
	Unchanged Latency `json:"unchanged_pre_step"`
	// UnchangedEarly: the same, played at once after the member's first
	// answer, while it still checks the store's objects in the
	// background (before SettledSeconds).
	UnchangedEarly Latency  `json:"unchanged_pre_step_early"`
	SkillCall      Latency  `json:"skill_call"`
	MCP            ScaleMCP `json:"mcp"`
	// Errors lists what did not come out as it should (a wrong count,
	// an error answer); empty when the run is sound.
	Errors []string `json:"errors,omitempty"`
}

// ScalePush is the `skills push` of the generated skills, run as its own
// process.
type ScalePush struct {
	Seconds      float64 `json:"seconds"`                  // wall time of the whole command
	PeakRSSBytes int64   `json:"peak_rss_bytes,omitempty"` // of the pushing process
	Added        int     `json:"added"`                    // skills it reported added
	Revision     uint64  `json:"revision"`                 // store revision it printed
}

// ScaleMember is the serve member's life, counted from its process start.
type ScaleMember struct {
	// ReadySeconds: until it announced that it serves (its consumer
	// pulls; what /readyz then confirms, Readyz).
	ReadySeconds float64 `json:"ready_seconds"`
	Readyz       bool    `json:"readyz"`
	// FirstAnswerSeconds: until the first pre-step, sent as soon as it
	// was ready, was answered with its catalog; FirstCatalogUS is that
	// pre-step's own round trip.
	FirstAnswerSeconds float64 `json:"first_answer_seconds"`
	FirstCatalogUS     float64 `json:"first_catalog_us"`
	// SettledSeconds: until its CPU went quiet after the first answer
	// (the background check of the store's objects done); 0 when it did
	// not within the bound, or could not be measured.
	SettledSeconds float64 `json:"settled_seconds"`
	PeakRSSBytes   int64   `json:"peak_rss_bytes,omitempty"` // whole life
	CPUSeconds     float64 `json:"cpu_seconds,omitempty"`    // whole life
}

// ScaleCatalog is the catalog decision of a new session.
type ScaleCatalog struct {
	Latency   Latency `json:"latency"`
	Listed    int     `json:"listed"`  // skills the catalog lists
	Omitted   int     `json:"omitted"` // skills the size limit left out
	TextBytes int     `json:"text_bytes"`
}

// ScaleMCP is an MCP host on the member's --mcp-listen, with its token.
type ScaleMCP struct {
	ConnectUS float64 `json:"connect_us"`        // initialize handshake
	ListUS    float64 `json:"resources_list_us"` // resources/list, every page
	Resources int     `json:"resources"`
	Pages     int     `json:"pages"`
}

// Summarize summarises latency samples (sorting them in place).
func Summarize(samples []time.Duration) Latency { return summarize(samples) }

// ComputeRatios fills Ratios and the goal's verdict from the first two
// runs.
func (r *ScaleReport) ComputeRatios() {
	r.GoalUnchanged = ScaleGoalUnchanged
	if len(r.Runs) < 2 {
		return
	}
	big, ref := r.Runs[0], r.Runs[1]
	r.Ratios = map[string]float64{}
	put := func(key string, a, b float64) {
		if a > 0 && b > 0 {
			r.Ratios[key] = a / b
		}
	}
	put("unchanged_p50", big.Unchanged.P50, ref.Unchanged.P50)
	put("unchanged_early_p50", big.UnchangedEarly.P50, ref.UnchangedEarly.P50)
	put("skill_call_p50", big.SkillCall.P50, ref.SkillCall.P50)
	put("catalog_p50", big.Catalog.Latency.P50, ref.Catalog.Latency.P50)
	put("member_peak_rss", float64(big.Member.PeakRSSBytes), float64(ref.Member.PeakRSSBytes))
	if v, ok := r.Ratios["unchanged_p50"]; ok {
		r.UnchangedGoalMet = v <= ScaleGoalUnchanged
	}
}

// FormatScale renders a scale report as a table for people.
func FormatScale(r *ScaleReport) string {
	var b strings.Builder
	counts := make([]string, len(r.Runs))
	for i, run := range r.Runs {
		counts[i] = fmt.Sprint(run.Skills)
	}
	fmt.Fprintf(&b, "skillstream bench --scale: skill stores of %s skills, each pushed, then served by a fresh serve member; %s; %d new sessions, %d unchanged pre-steps and %d skill calls each\n",
		strings.Join(counts, " and "), r.Encoding, r.FreshSessions, r.Samples, r.Samples)
	m := r.Machine
	fmt.Fprintf(&b, "machine: %d CPUs, %s memory, %s %s; load average %s before, %s after\n\n",
		m.CPUs, benchBytes(m.MemoryBytes), m.GoVersion, m.OSArch, orDash(m.LoadBefore), orDash(m.LoadAfter))

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := ""
	for _, c := range counts {
		head += "\t" + c + " skills"
	}
	if len(r.Runs) >= 2 {
		head += "\tratio"
	}
	fmt.Fprintln(tw, head+"\t")
	row := func(label string, cell func(ScaleRun) string, ratioKey string) {
		fmt.Fprint(tw, label)
		for _, run := range r.Runs {
			fmt.Fprint(tw, "\t"+cell(run))
		}
		if len(r.Runs) >= 2 {
			v, ok := r.Ratios[ratioKey]
			if ok {
				fmt.Fprintf(tw, "\t%.2f×", v)
			} else {
				fmt.Fprint(tw, "\t")
			}
		}
		fmt.Fprintln(tw, "\t")
	}
	secs := func(s float64) string {
		if s <= 0 {
			return "-"
		}
		return benchMicros(s * 1e6)
	}
	us := func(v float64) string {
		if v <= 0 {
			return "-"
		}
		return benchMicros(v)
	}
	row("push (skills push, wall)", func(s ScaleRun) string { return secs(s.Push.Seconds) }, "")
	row("push peak RSS", func(s ScaleRun) string { return benchBytes(s.Push.PeakRSSBytes) }, "")
	row("member ready (start → serving)", func(s ScaleRun) string { return secs(s.Member.ReadySeconds) }, "")
	row("member start → first pre-step answered", func(s ScaleRun) string { return secs(s.Member.FirstAnswerSeconds) }, "")
	row("first catalog (cold member)", func(s ScaleRun) string { return us(s.Member.FirstCatalogUS) }, "")
	row("member settled (store checked)", func(s ScaleRun) string { return secs(s.Member.SettledSeconds) }, "")
	row("new session catalog p50", func(s ScaleRun) string { return us(s.Catalog.Latency.P50) }, "catalog_p50")
	row("new session catalog max", func(s ScaleRun) string { return us(s.Catalog.Latency.Max) }, "")
	row("catalog listed / left out", func(s ScaleRun) string {
		return fmt.Sprintf("%d / %d", s.Catalog.Listed, s.Catalog.Omitted)
	}, "")
	row("catalog text", func(s ScaleRun) string { return benchBytes(int64(s.Catalog.TextBytes)) }, "")
	row("unchanged pre-step p50", func(s ScaleRun) string { return us(s.Unchanged.P50) }, "unchanged_p50")
	row("unchanged pre-step p99", func(s ScaleRun) string { return us(s.Unchanged.P99) }, "")
	row("unchanged p50, from the first answer", func(s ScaleRun) string { return us(s.UnchangedEarly.P50) }, "unchanged_early_p50")
	row("skill call p50", func(s ScaleRun) string { return us(s.SkillCall.P50) }, "skill_call_p50")
	row("skill call p99", func(s ScaleRun) string { return us(s.SkillCall.P99) }, "")
	row("MCP connect", func(s ScaleRun) string { return us(s.MCP.ConnectUS) }, "")
	row("MCP resources/list, every page", func(s ScaleRun) string { return us(s.MCP.ListUS) }, "")
	row("MCP resources listed (pages)", func(s ScaleRun) string {
		return fmt.Sprintf("%d (%d)", s.MCP.Resources, s.MCP.Pages)
	}, "")
	row("member peak RSS", func(s ScaleRun) string { return benchBytes(s.Member.PeakRSSBytes) }, "member_peak_rss")
	row("member CPU", func(s ScaleRun) string {
		if s.Member.CPUSeconds <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fs", s.Member.CPUSeconds)
	}, "")
	row("errors", func(s ScaleRun) string { return fmt.Sprint(len(s.Errors)) }, "")
	tw.Flush()

	fmt.Fprintln(&b)
	if v, ok := r.Ratios["unchanged_p50"]; ok && len(r.Runs) >= 2 {
		verdict := "met"
		if !r.UnchangedGoalMet {
			verdict = "NOT met"
		}
		fmt.Fprintf(&b, "unchanged pre-step p50 at %d skills: %.2f× the %d-skill member's (goal ≤ %.2f×: %s)\n",
			r.Runs[0].Skills, v, r.Runs[1].Skills, r.GoalUnchanged, verdict)
	}
	if v, ok := r.Ratios["unchanged_early_p50"]; ok && len(r.Runs) >= 2 {
		verdict := "met"
		if v > r.GoalUnchanged {
			verdict = "NOT met"
		}
		fmt.Fprintf(&b, "unchanged pre-step p50 at %d skills from the member's first answer, while it checks the store: %.2f× the %d-skill member's from its first answer (goal ≤ %.2f×: %s)\n",
			r.Runs[0].Skills, v, r.Runs[1].Skills, r.GoalUnchanged, verdict)
	}
	for _, run := range r.Runs {
		if run.Member.SettledSeconds == 0 {
			fmt.Fprintf(&b, "%d skills: the member's CPU did not go quiet, or could not be read; later figures may include its background store check\n", run.Skills)
		}
		for _, e := range run.Errors {
			fmt.Fprintf(&b, "%d skills: error: %s\n", run.Skills, e)
		}
	}
	return b.String()
}
