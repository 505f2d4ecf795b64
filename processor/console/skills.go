package console

import "net/http"

// SkillSources are what the skills pages read.
type SkillSources struct{}

// skillPages are the skills pages' routes.
func (s *Server) skillPages() []page {
	return []page{{method: "GET", path: "skills", role: RoleViewer, h: s.skillsPage}}
}

func (s *Server) skillsPage(w http.ResponseWriter, r *http.Request) error {
	s.render(w, r, http.StatusOK, "skills.html", map[string]any{"Title": "Skills", "Nav": "skills"})
	return nil
}
