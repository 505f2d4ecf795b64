package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/usage"
	"github.com/skillstream/skillstream/processor/usage/projection"
)

// UsageSources are what the usage pages read besides Sources' JS, Stream,
// Layout, Prefix, UsageBucket and Registry: nothing yet.
type UsageSources struct{}

// usagePages are the usage pages' routes.
func (s *Server) usagePages() []page {
	return []page{{method: "GET", path: "usage", role: RoleViewer, h: s.usagePage}}
}

// plotSpec is one plot's data, as plot.js reads it from the page's JSON
// data block: the points' times (Unix seconds) and one line per series.
type plotSpec struct {
	Title  string     `json:"title"`
	X      []int64    `json:"x"`
	Series []plotLine `json:"series"`
}

type plotLine struct {
	Label  string `json:"label"`
	Values []int  `json:"values"`
}

// plot is a plot on a page: the id of its data block and its data.
type plot struct {
	ID   string
	Spec plotSpec
}

// usageOptions are the options of the tenant's usage projection, read
// only (the console never creates its bucket). The subject prefix is the
// sources' or, when they name none, the sessions stream's.
func (s *Server) usageOptions(ctx context.Context) (projection.Options, error) {
	src := s.cfg.Sources
	prefix := src.Prefix
	if prefix == "" && len(src.Partitions) > 0 {
		prefix = events.DefaultPrefix // no stream of that name to ask
	}
	if prefix == "" {
		var err error
		if prefix, err = streamPrefix(ctx, src.JS, src.Stream); err != nil {
			return projection.Options{}, err
		}
	}
	return projection.Options{Stream: src.Stream, Prefix: prefix, Layout: src.Layout, Bucket: src.UsageBucket, NoProvision: true}, nil
}

// usageSeries reads the projection's series of step over the step's
// default window ending now: the points usage --by prints.
func (s *Server) usageSeries(ctx context.Context, step projection.Step) (*projection.Series, error) {
	if s.cfg.Sources.JS == nil || s.cfg.Sources.Stream == "" {
		return nil, errors.New("this console has no sessions stream to read usage from")
	}
	opts, err := s.usageOptions(ctx)
	if err != nil {
		return nil, err
	}
	return projection.ReadSeriesPartitions(ctx, s.cfg.Sources.JS, opts, len(s.cfg.Sources.Partitions), step, time.Time{}, s.cfg.Now())
}

// readUsage reads the projection's report from since: with partitions,
// every partition's projection, summed.
func (s *Server) readUsage(ctx context.Context, opts projection.Options, since time.Time) (*usage.Report, error) {
	return projection.ReadPartitions(ctx, s.cfg.Sources.JS, opts, len(s.cfg.Sources.Partitions), since)
}

// totalPlot is the plot of a series' totals.
func totalPlot(id, title string, sr *projection.Series) plot {
	t := sr.Total
	return plot{ID: id, Spec: plotSpec{Title: title, X: sr.Times, Series: []plotLine{
		{"loads", t.Loads}, {"searches", t.Searches}, {"search then load", t.SearchThenLoad}, {"searches that found nothing", t.NoMatch}, {"errors", t.Errors},
	}}}
}

// skillPlots are the plots of one skill's series: its use, and its
// loads and errors per store revision and channel when releases split
// them.
func skillPlots(id string, sr *projection.Series, sk *projection.SkillSeries) []plot {
	ps := []plot{{ID: id, Spec: plotSpec{Title: sk.Name, X: sr.Times, Series: []plotLine{
		{"loads", sk.Loads}, {"found by a search", sk.Found}, {"loaded after a search", sk.SearchThenLoad}, {"errors", sk.Errors},
	}}}}
	if len(sk.Releases) > 0 {
		rel := plot{ID: id + "-releases", Spec: plotSpec{Title: sk.Name + ": by revision and channel", X: sr.Times}}
		for _, r := range sk.Releases {
			rel.Spec.Series = append(rel.Spec.Series,
				plotLine{fmt.Sprintf("loads r%d %s", r.Rev, r.Channel), r.Loads},
				plotLine{fmt.Sprintf("errors r%d %s", r.Rev, r.Channel), r.Errors})
		}
		ps = append(ps, rel)
	}
	return ps
}

// neverUsed is a row of the never-used table.
type neverUsed struct {
	Name, Provider, Description string
}

// usageView is the usage page.
type usageView struct {
	Step      string
	Steps     []string
	Skill     string
	Skills    []string
	From, To  time.Time
	Plots     []plot
	NoSkill   bool // the skill asked for has no use in the window
	Partial   []string
	Lag       uint64
	Err       string
	NeverUsed []neverUsed
	Sort      string
	Desc      bool
	Sorts     []sortLink
}

type sortLink struct {
	Label, Key string
	Here       bool
}

func (usageView) PageTitle() (string, string) { return "Usage", "usage" }

// neverUsedSorts are the never-used table's orders: a column, "-" first
// for descending.
var neverUsedSorts = []string{"name", "-name", "provider", "-provider"}

func (s *Server) usagePage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	v := usageView{Step: string(projection.ByHour), Steps: []string{string(projection.ByHour), string(projection.ByDay)}, Sort: "name"}
	if by := q.Get("by"); by != "" {
		step, err := projection.ParseStep(by)
		if err != nil {
			return BadRequest("by: %v", err)
		}
		v.Step = string(step)
	}
	if name := q.Get("skill"); name != "" {
		if err := catalog.CheckName(name); err != nil {
			return BadRequest("skill: %v", err)
		}
		v.Skill = name
	}
	if o := q.Get("sort"); o != "" {
		if !slices.Contains(neverUsedSorts, o) {
			return BadRequest("sort %q: want one of %s", o, strings.Join(neverUsedSorts, ", "))
		}
		v.Sort = o
	}
	for _, k := range []struct{ label, key string }{{"Skill", "name"}, {"Offered by", "provider"}} {
		key := k.key
		if v.Sort == key {
			key = "-" + key // the column again: the other way
		}
		v.Sorts = append(v.Sorts, sortLink{Label: k.label, Key: key, Here: strings.TrimPrefix(v.Sort, "-") == k.key})
	}
	ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
	defer cancel()
	sr, err := s.usageSeries(ctx, projection.Step(v.Step))
	if err != nil {
		v.Err = err.Error()
		if errors.Is(err, projection.ErrNoProjection) {
			v.Err += ": a serve keeps the usage projection (usage --rebuild builds it now)"
		}
		s.render(w, r, http.StatusOK, "usage.html", v)
		return nil
	}
	v.From, v.To, v.Partial, v.Lag = sr.From, sr.To, sr.Partial, sr.LagRecords
	if !sr.LagCounted {
		v.Partial = append(v.Partial, fmt.Sprintf("the projection is %d output records behind the stream; they are not counted yet", sr.LagRecords))
	}
	for _, sk := range sr.Skills {
		v.Skills = append(v.Skills, sk.Name)
	}
	v.Plots = append(v.Plots, totalPlot("plot-total", "All skills, by "+v.Step, sr))
	if v.Skill != "" {
		if sk := sr.Skill(v.Skill); sk != nil {
			v.Plots = append(v.Plots, skillPlots("plot-skill", sr, sk)...)
		} else {
			v.NoSkill = true
		}
	}
	opts, err := s.usageOptions(ctx)
	if err != nil {
		return err
	}
	rep, err := s.readUsage(ctx, opts, sr.From)
	if err != nil {
		return fmt.Errorf("read the usage projection: %w", err)
	}
	offered := map[string]catalog.Summary{}
	if reg := s.cfg.Sources.Registry; reg != nil {
		if snap, err := reg.Snapshot(ctx, catalog.Query{}); err == nil {
			for _, sum := range snap.Skills {
				offered[sum.Name] = sum
			}
		}
	}
	for _, name := range rep.ListedNeverUsed {
		row := neverUsed{Name: name}
		if sum, ok := offered[name]; ok {
			row.Provider, row.Description = sum.Provider, sum.Description
		}
		v.NeverUsed = append(v.NeverUsed, row)
	}
	key, desc := strings.TrimPrefix(v.Sort, "-"), strings.HasPrefix(v.Sort, "-")
	v.Desc = desc
	slices.SortStableFunc(v.NeverUsed, func(a, b neverUsed) int {
		c := strings.Compare(a.Name, b.Name)
		if key == "provider" {
			if c2 := strings.Compare(a.Provider, b.Provider); c2 != 0 {
				c = c2
			}
		}
		if desc {
			return -c
		}
		return c
	})
	s.render(w, r, http.StatusOK, "usage.html", v)
	return nil
}
