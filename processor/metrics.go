package processor

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillstream/skillstream/events"
)

// metrics are the processor's Prometheus collectors.
type metrics struct {
	triggers      *prometheus.CounterVec   // kind, outcome
	conflicts     prometheus.Counter       // optimistic concurrency conflicts on append
	redeliveries  *prometheus.CounterVec   // kind
	duplicates    *prometheus.CounterVec   // kind: answered from an output already appended
	idsTaken      prometheus.Counter       // output Msg-Ids found taken by another record
	providerErrs  prometheus.Counter       // skill tool calls that failed in a provider
	rejects       *prometheus.CounterVec   // reason
	panics        prometheus.Counter       // recovered panics
	deadLetters   *prometheus.CounterVec   // kind
	transient     *prometheus.CounterVec   // kind: deliveries that failed and were retried
	tooLarge      *prometheus.CounterVec   // kind: outputs that could not fit in one message
	latency       *prometheus.HistogramVec // stage: read, decide, append, total
	definitionReq prometheus.Counter       // tool definition requests served
	handedBack    prometheus.Counter       // triggers received but not started at shutdown
	inflight      prometheus.Gauge         // triggers being handled by this process
	pending       prometheus.Gauge         // consumer: triggers not yet delivered
	ackPending    prometheus.Gauge         // consumer: triggers delivered, not yet acknowledged
	divergence    prometheus.Gauge         // 1 while a view divergence is unresolved
	viewChecks    *prometheus.CounterVec   // result: replacements checked against the replaced catalog's view
	headReads     *prometheus.CounterVec   // result: reads of a large catalog's head instead of the catalog (head.go)
	freshWaits    *prometheus.HistogramVec // kind, result: waits for the skill store revision a trigger named (fresh.go)
	skills        *skillMetrics            // per-skill loads and invocations (skillmetrics.go)
	searches      *prometheus.CounterVec   // outcome: skill searches answered (appended results)
	pullRestarts  *prometheus.CounterVec   // reason: pull requests begun again after the server dropped them or the pull loop stalled (consume.go)
	overBudget    *prometheus.CounterVec   // reason: outputs not appended, over their session's budget (outbudget.go)
	evicted       *prometheus.CounterVec   // kind: triggers whose output was removed by the stream's limits before it was read back

	// The latency series of each stage, looked up once (zero) rather
	// than by label at every observation.
	stageLatency map[string]prometheus.Observer
}

// observe records d as the latency of stage.
func (m *metrics) observe(stage string, d time.Duration) {
	o, ok := m.stageLatency[stage]
	if !ok {
		o = m.latency.WithLabelValues(stage)
	}
	o.Observe(d.Seconds())
}

// Latency stages.
const (
	stageRead   = "read"
	stageDecide = "decide"
	stageAppend = "append"
	stageTotal  = "total"
)

// newCounter, newCounterVec and newGauge declare the processor's collectors, all in
// the skillstream namespace.
func newCounter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "skillstream", Name: name, Help: help})
}

func newCounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "skillstream", Name: name, Help: help}, labels)
}

func newGauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "skillstream", Name: name, Help: help})
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	buckets := []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	m := &metrics{
		triggers: newCounterVec("triggers_total",
			"Triggers handled, by kind (pre-step, skill-call, skill-search) and outcome.", "kind", "outcome"),
		conflicts: newCounter("append_conflicts_total",
			"Appends refused because the session moved on; each leads to a re-read and re-decision."),
		redeliveries: newCounterVec("redeliveries_total",
			"Triggers received more than once.", "kind"),
		idsTaken: newCounter("output_ids_taken_total",
			"Outputs whose Msg-Id was taken by a record that is not the output (appended under another id)."),
		duplicates: newCounterVec("duplicate_triggers_total",
			"Triggers answered with an output appended earlier for the same trigger, step or call.", "kind"),
		providerErrs: newCounter("provider_errors_total",
			"Skill tool calls answered with a provider failure."),
		rejects: newCounterVec("rejects_total",
			"Malformed triggers terminated, by reason.", "reason"),
		panics: newCounter("panics_total",
			"Panics recovered while handling a trigger; the trigger is terminated."),
		deadLetters: newCounterVec("dead_letters_total",
			"Triggers terminated at their last delivery after transient failures.", "kind"),
		transient: newCounterVec("transient_failures_total",
			"Deliveries that failed transiently and were negatively acknowledged for a later retry.", "kind"),
		tooLarge: newCounterVec("outputs_too_large_total",
			"Outputs that could not be encoded within the largest message the stream takes; answered with a too_large error, never retried.", "kind"),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "skillstream", Name: "stage_seconds",
			Help:    "Latency of handling stages: read (session log), decide, append, total (receipt to ack).",
			Buckets: buckets,
		}, []string{"stage"}),
		definitionReq: newCounter("tool_definition_requests_total",
			"Requests for the tool definitions (the skill tool's, or every tool's)."),
		handedBack: newCounter("handed_back_total",
			"Triggers received but not started when the processor stopped, handed back for redelivery."),
		inflight: newGauge("triggers_in_flight",
			"Triggers being handled by this process right now."),
		pending: newGauge("consumer_pending",
			"Triggers in the stream not yet delivered to any member of the consumer group (the group's backlog), as last read."),
		ackPending: newGauge("consumer_ack_pending",
			"Triggers delivered to members of the consumer group and not yet acknowledged, as last read."),
		divergence: newGauge("view_divergence",
			"1 while this member has found another member seeing other skills for the same query at the same store revision (local folders differ), or serving another skill store configuration (result store_differs of view_checks_total), 0 when none is unresolved."),
		viewChecks: newCounterVec("view_checks_total",
			"Replacements of a catalog with another digest, checked against the view the replaced catalog was decided on, by result.", "result"),
		headReads: newCounterVec("head_reads_total",
			"Pre-steps that read the head of their session's remembered large catalog instead of the catalog, by result: hit (the catalog is still the newest), stale (it is not: read in full), unsure (read in full).", "result"),
		freshWaits: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "skillstream", Name: "store_freshness_wait_seconds",
			Help:    "Triggers whose minStoreRevision (or minStoreEpoch) this member had not applied yet, by kind and result (reached: decided after catching up; timed_out, no_store: answered unavailable; unknown: a revision the store's bucket never reached, other_epoch: a token of other buckets than the store's, both answered unavailable at once), and how long they waited.",
			Buckets: buckets,
		}, []string{"kind", "result"}),
		skills: newSkillMetrics(DefaultSkillLabelLimit),
		pullRestarts: newCounterVec("pull_restarts_total",
			"Times this member began pulling again, by reason: leader_change (the consumer's leader changed and dropped the pull request; pulled again at once), consumer_gone (the consumer was deleted: looked up and created again when provisioning is on), no_heartbeat (pull requests went unanswered, not even by a heartbeat, for the stall bound: the consumer looked up again), failing (pull requests failed for the stall bound: the same).", "reason"),
		searches: newCounterVec("skill_searches_total",
			"Skill search results appended, by outcome: found (matches shown), no_match (none, or an offset past them all), or the error code (bad_request for invalid arguments or a processor without search).", "outcome"),
		overBudget: newCounterVec("budget_refusals_total",
			"Outputs not appended because their session was over its budget per minute, by reason: catalog_resends (a full catalog re-sent after a compaction masked it), catalog_bytes (the bytes of the catalogs after the session's first; both answered incomplete, reason over_budget), invocation_bytes (a user invocation; listed as ignored, reason over_budget).", "reason"),
		evicted: newCounterVec("outputs_evicted_total",
			"Triggers whose output (found by its Msg-Id) was removed by the stream's limits before it could be read back: answered unavailable and not retried.", "kind"),
	}
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	var err error
	m.triggers = register(reg, m.triggers, &err)
	m.conflicts = register(reg, m.conflicts, &err)
	m.redeliveries = register(reg, m.redeliveries, &err)
	m.duplicates = register(reg, m.duplicates, &err)
	m.idsTaken = register(reg, m.idsTaken, &err)
	m.providerErrs = register(reg, m.providerErrs, &err)
	m.rejects = register(reg, m.rejects, &err)
	m.panics = register(reg, m.panics, &err)
	m.deadLetters = register(reg, m.deadLetters, &err)
	m.transient = register(reg, m.transient, &err)
	m.tooLarge = register(reg, m.tooLarge, &err)
	m.latency = register(reg, m.latency, &err)
	m.definitionReq = register(reg, m.definitionReq, &err)
	m.handedBack = register(reg, m.handedBack, &err)
	m.inflight = register(reg, m.inflight, &err)
	m.pending = register(reg, m.pending, &err)
	m.ackPending = register(reg, m.ackPending, &err)
	m.divergence = register(reg, m.divergence, &err)
	m.viewChecks = register(reg, m.viewChecks, &err)
	m.headReads = register(reg, m.headReads, &err)
	m.freshWaits = register(reg, m.freshWaits, &err)
	m.searches = register(reg, m.searches, &err)
	m.pullRestarts = register(reg, m.pullRestarts, &err)
	m.overBudget = register(reg, m.overBudget, &err)
	m.evicted = register(reg, m.evicted, &err)
	m.skills.register(reg, &err)
	if err != nil {
		return nil, err
	}
	m.zero()
	return m, nil
}

// register registers c, or returns the collector already registered under
// the same description, so that several processors in one process share
// their metrics. The first failure is kept in *errp.
func register[T prometheus.Collector](reg prometheus.Registerer, c T, errp *error) T {
	if *errp != nil {
		return c
	}
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing
		}
	}
	*errp = fmt.Errorf("register metrics: %w", err)
	return c
}

// Label values known in advance, so that every series exists (at 0) from
// the start: a rate over a counter that appears only at its first
// increment misses that increment, and an absent series cannot be told
// from a broken exporter.
var (
	kindLabels      = []string{"pre-step", "skill-call", "skill-search"}
	preStepOutcomes = []string{events.OutcomeAppended, events.OutcomeUnchanged, events.OutcomeEmpty,
		events.OutcomeIncomplete, events.OutcomeExpired, events.OutcomeRejected, events.OutcomeBehind, events.OutcomeDiverged}
	skillCallOutcomes = []string{"ok", events.CodeInvalidName, events.CodeUnknown, events.CodeNotModelInvocable,
		events.CodeProvider, events.CodeBadRequest, events.CodeExpired, codeUnavailable}
	searchOutcomes = []string{searchFound, searchNoMatch, events.CodeBadRequest, events.CodeProvider, events.CodeExpired, codeUnavailable}
	rejectReasons  = []string{reasonEnvelope, reasonSubject, reasonEncoding, reasonInbox, reasonTooLarge, reasonVersion,
		reasonField, reasonUndecodable, reasonSessionMismatch, reasonID, reasonCwd, reasonSearchOff}
	stages = []string{stageRead, stageDecide, stageAppend, stageTotal}
)

// zero creates every labelled series at 0.
func (m *metrics) zero() {
	for _, o := range preStepOutcomes {
		m.triggers.WithLabelValues("pre-step", o)
	}
	for _, o := range skillCallOutcomes {
		m.triggers.WithLabelValues("skill-call", o)
	}
	for _, o := range searchOutcomes {
		m.triggers.WithLabelValues("skill-search", o)
		m.searches.WithLabelValues(o)
	}
	for _, k := range kindLabels {
		m.redeliveries.WithLabelValues(k)
		m.duplicates.WithLabelValues(k)
		m.deadLetters.WithLabelValues(k)
		m.transient.WithLabelValues(k)
		m.evicted.WithLabelValues(k)
	}
	for _, r := range []string{budgetCatalogResends, budgetCatalogBytes, budgetInvocationBytes} {
		m.overBudget.WithLabelValues(r)
	}
	for _, r := range rejectReasons {
		m.rejects.WithLabelValues(r)
	}
	m.stageLatency = make(map[string]prometheus.Observer, len(stages))
	for _, s := range stages {
		m.stageLatency[s] = m.latency.WithLabelValues(s)
	}
	for _, r := range viewCheckResults {
		m.viewChecks.WithLabelValues(r)
	}
	for _, r := range headReadResults {
		m.headReads.WithLabelValues(r)
	}
	for _, r := range pullRestartReasons {
		m.pullRestarts.WithLabelValues(r)
	}
}
