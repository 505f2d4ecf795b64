package agentskills_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// TestNoFollowCoversLinkedRoots: with links not followed, a skills folder
// that is itself a link (or lies in a linked folder of the project) is
// not read either, with a diagnostic naming the link; followed otherwise.
// Replacing the link with a real folder is seen.
func TestNoFollowCoversLinkedRoots(t *testing.T) {
	elsewhere := t.TempDir()
	write(t, filepath.Join(elsewhere, "skills/outside/SKILL.md"), skillText("outside", "from elsewhere", ""))
	for _, tc := range []struct{ name, link, target string }{
		{"root is a link", ".agents/skills", filepath.Join(elsewhere, "skills")},
		{"parent is a link", ".agents", elsewhere},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := t.TempDir()
			mkdir(t, filepath.Join(repo, ".git"))
			link := filepath.Join(repo, tc.link)
			mkdir(t, filepath.Dir(link))
			symlink(t, tc.target, link)

			_, follow := newWatchedRegistry(t, agentskills.Config{NoUserDir: true})
			snapshotIs(t, follow, repo, "outside=from elsewhere")

			p, r := newWatchedRegistry(t, agentskills.Config{NoUserDir: true, NoFollowSymlinks: true})
			snapshotIs(t, r, repo)
			if got := diagnostics(t, p, repo)[link]; !strings.Contains(got, "following links is disabled") {
				t.Errorf("diagnostic for %s = %q, want links disabled", link, got)
			}

			// The link replaced by a real folder: read at once.
			if err := os.Remove(link); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(repo, ".agents/skills/inside/SKILL.md"), skillText("inside", "real folder", ""))
			snapshotIs(t, r, repo, "inside=real folder")
		})
	}
	t.Run("custom folder is a link", func(t *testing.T) {
		link := filepath.Join(t.TempDir(), "team-skills")
		symlink(t, filepath.Join(elsewhere, "skills"), link)
		p, r := newWatchedRegistry(t, agentskills.Config{NoUserDir: true, NoFollowSymlinks: true, CustomDirs: []string{link}})
		snapshotIs(t, r, "")
		if got := diagnostics(t, p, "")[link]; !strings.Contains(got, "following links is disabled") {
			t.Errorf("diagnostic for %s = %q, want links disabled", link, got)
		}
		if l := agentskills.ScanFolder(context.Background(), link, false); len(l.Skills) != 0 || len(l.Diagnostics) != 1 {
			t.Errorf("ScanFolder without following = %+v, want one diagnostic", l)
		}
	})
}

// TestRenamedParentOfRoot: renaming a folder above a watched skills folder
// moves the folder away; the next snapshot says so, and renaming it back
// brings the skills back.
func TestRenamedParentOfRoot(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "work", "repo")
	mkdir(t, filepath.Join(repo, ".git"))
	write(t, filepath.Join(repo, ".agents/skills/proj/SKILL.md"), skillText("proj", "project skill", ""))
	custom := filepath.Join(base, "team", "skills")
	write(t, filepath.Join(custom, "team/SKILL.md"), skillText("team", "team skill", ""))
	_, r := newWatchedRegistry(t, agentskills.Config{NoUserDir: true, CustomDirs: []string{custom}})
	snapshotIs(t, r, repo, "proj=project skill", "team=team skill")

	mv := func(from, to string) {
		t.Helper()
		if err := os.Rename(from, to); err != nil {
			t.Fatal(err)
		}
	}
	mv(filepath.Join(base, "team"), filepath.Join(base, "team-old"))
	snapshotIs(t, r, repo, "proj=project skill")
	mv(filepath.Join(base, "team-old"), filepath.Join(base, "team"))
	snapshotIs(t, r, repo, "proj=project skill", "team=team skill")

	// The project's .agents folder renamed: its skills folder is gone.
	mv(filepath.Join(repo, ".agents"), filepath.Join(repo, ".agents-old"))
	snapshotIs(t, r, repo, "team=team skill")
	mv(filepath.Join(repo, ".agents-old"), filepath.Join(repo, ".agents"))
	snapshotIs(t, r, repo, "proj=project skill", "team=team skill")

	// A folder above the project renamed: the working directory itself
	// is gone, and so are its skills.
	mv(filepath.Join(base, "work"), filepath.Join(base, "work-old"))
	snapshotIs(t, r, repo, "team=team skill")
}

// TestWatchesPerFolderAreBounded: a folder with more skill folders than
// the bound takes only a few watches; edits inside its skill folders are
// found by polling, skills added at once.
func TestWatchesPerFolderAreBounded(t *testing.T) {
	root := t.TempDir()
	const n = 40
	for i := range n {
		name := fmt.Sprintf("s%02d", i)
		write(t, filepath.Join(root, name, "SKILL.md"), skillText(name, "v1", ""))
	}
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	p, r := newWatchedRegistry(t, agentskills.Config{
		NoUserDir: true, CustomDirs: []string{root},
		MaxWatchesPerFolder: 8, PollInterval: 20 * time.Millisecond, Logger: log,
	})
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("s%02d=v1", i)
	}
	snapshotIs(t, r, "", want...)
	// The folder and the folders above it; none of its skill folders.
	if w, want := p.Stats().Watches, strings.Count(filepath.Clean(root), string(filepath.Separator))+1; w != want {
		t.Errorf("%d watches for a folder of %d skills over the bound of 8, want %d", w, n, want)
	}
	if !strings.Contains(logs.String(), "checked periodically") {
		t.Errorf("falling back to polling was not logged: %s", logs.String())
	}
	pf, err := p.Polled(context.Background(), catalog.At(""))
	if err != nil || len(pf) != 1 || pf[0].Path != root || pf[0].Needed != n || pf[0].Limit != 8 {
		t.Errorf("Polled = %+v, %v", pf, err)
	}

	// An edit inside a skill folder (not watched): found by polling.
	write(t, filepath.Join(root, "s17", "SKILL.md"), skillText("s17", "v2", ""))
	want[17] = "s17=v2"
	snapshotIs(t, r, "", want...)
	// A skill added in the folder (watched): seen.
	write(t, filepath.Join(root, "t", "SKILL.md"), skillText("t", "new", ""))
	snapshotIs(t, r, "", append(want, "t=new")...)

	// Under the bound again: watched again.
	for i := range n {
		if err := os.RemoveAll(filepath.Join(root, fmt.Sprintf("s%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	snapshotIs(t, r, "", "t=new")
	if pf, _ := p.Polled(context.Background(), catalog.At("")); len(pf) != 0 {
		t.Errorf("Polled = %+v after the folder shrank", pf)
	}
	write(t, filepath.Join(root, "t", "SKILL.md"), skillText("t", "edited", ""))
	snapshotIs(t, r, "", "t=edited")
}

// TestDroppedFilesAreLogged: each dropped file is logged once per version,
// with its path and reason, at warning level.
func TestDroppedFilesAreLogged(t *testing.T) {
	root := t.TempDir()
	bad := filepath.Join(root, "bad", "SKILL.md")
	write(t, bad, "---\nname: Bad\ndescription: d\n---\n")
	write(t, filepath.Join(root, "good", "SKILL.md"), skillText("good", "fine", ""))
	write(t, filepath.Join(root, "README.md"), "# not a skill\n")
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	_, r := newWatchedRegistry(t, agentskills.Config{NoUserDir: true, CustomDirs: []string{root}, Logger: log})
	snapshotIs(t, r, "", "good=fine")
	snapshotIs(t, r, "", "good=fine")
	count := func() int { return strings.Count(logs.String(), "skill file dropped") }
	if c := count(); c != 1 {
		t.Fatalf("%d log lines for one dropped file:\n%s", c, logs.String())
	}
	line := logs.String()
	for _, want := range []string{"level=WARN", "path=" + bad, `name \"Bad\" is invalid`} {
		if !strings.Contains(line, want) {
			t.Errorf("log %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "README") {
		t.Errorf("a README.md without frontmatter was logged as dropped: %s", line)
	}
	// Edited and still invalid: logged again, once.
	write(t, bad, "---\nname: Bad\ndescription: still bad\n---\n")
	eventually(t, logs.String, func() bool {
		snapshotIs(t, r, "", "good=fine")
		return count() == 2
	})
	write(t, filepath.Join(root, "good", "SKILL.md"), skillText("good", "edited", ""))
	snapshotIs(t, r, "", "good=edited")
	if c := count(); c != 2 {
		t.Errorf("%d log lines after an unrelated edit, want 2:\n%s", c, logs.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
