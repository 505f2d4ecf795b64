package console

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// view is what every page template is given: the layout's fields and
// the page's own data (Data).
type view struct {
	Title  string
	Base   string
	Tenant string
	Role   string
	// CanAct says the signed-in role may act (operator).
	CanAct bool
	CSRF   string
	// Nav is the page's section, highlighted in the menu.
	Nav  string
	Data any
}

var funcs = template.FuncMap{
	"bytes": func(n int64) string {
		switch {
		case n >= 1<<20:
			return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
		case n >= 1<<10:
			return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
		}
		return fmt.Sprintf("%d B", n)
	},
	"stamp": func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"short": func(s string) string {
		if len(s) > 12 {
			return s[:12]
		}
		return s
	},
	"join": strings.Join,
}

// parseTemplates makes one template set per page file, each with the
// layout.
func (s *Server) parseTemplates() error {
	s.tmpl = map[string]*template.Template{}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return err
	}
	for _, n := range names {
		base := path.Base(n)
		if base == "layout.html" {
			continue
		}
		t, err := template.New(base).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return fmt.Errorf("console: template %s: %w", base, err)
		}
		s.tmpl[base] = t
	}
	return nil
}

// render writes the page name with data, in the layout. Rendering goes
// to a buffer first, so that a template error is an error page, not half
// a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	t := s.tmpl[name]
	if t == nil {
		http.Error(w, "console: no template "+name, http.StatusInternalServerError)
		return
	}
	v := view{Base: s.cfg.Base, Tenant: s.cfg.Tenant, Data: data}
	if sess, ok := s.session(r); ok {
		v.Role, v.CanAct, v.CSRF = sess.role.String(), sess.role >= RoleOperator, s.csrf(sess)
	}
	if m, ok := data.(map[string]any); ok {
		if t, ok := m["Title"].(string); ok {
			v.Title = t
		}
		if n, ok := m["Nav"].(string); ok {
			v.Nav = n
		}
	}
	if p, ok := data.(interface{ PageTitle() (string, string) }); ok {
		v.Title, v.Nav = p.PageTitle()
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "layout", v); err != nil {
		s.log.Error("console: render", "page", name, "err", err)
		http.Error(w, "console: the page could not be drawn", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// fail answers an error page with status.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, err error) {
	if status >= 500 {
		s.log.Error("console", "path", r.URL.Path, "err", err)
	}
	s.render(w, r, status, "error.html", map[string]any{"Title": http.StatusText(status), "Status": status, "Error": err.Error()})
}

type ctxKey struct{}

func withSession(ctx context.Context, s session) context.Context {
	return context.WithValue(ctx, ctxKey{}, s)
}

func sessionOf(ctx context.Context) (session, bool) {
	s, ok := ctx.Value(ctxKey{}).(session)
	return s, ok
}
