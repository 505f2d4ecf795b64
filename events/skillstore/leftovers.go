package skillstore

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Materialisation writes into a temporary folder beside its target and
// renames it into place. A process killed in between leaves that folder
// behind; the next materialisation into the same parent removes it. The
// folder's name says whose it was, .<target>.tmp-<pid>-<random>, so a
// folder of a process still running (another worker materialising the
// same skill right now) is left alone; one whose process is gone, or that
// is older than staleTemp whoever made it, is removed.

// staleTemp is the age after which a temporary folder is removed even
// when its process seems to live (a reused pid, another pid namespace).
const staleTemp = time.Hour

// tempPattern is the os.MkdirTemp pattern of a temporary folder for dir.
func tempPattern(dir string) string {
	return "." + filepath.Base(dir) + ".tmp-" + strconv.Itoa(os.Getpid()) + "-"
}

// removeLeftovers removes the temporary folders in parent that killed
// materialisations left behind.
func removeLeftovers(parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		i := strings.Index(name, ".tmp-")
		if !e.IsDir() || !strings.HasPrefix(name, ".") || i < 0 {
			continue
		}
		pidText, _, ok := strings.Cut(name[i+len(".tmp-"):], "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if processAlive(pid) && time.Since(info.ModTime()) < staleTemp {
			continue
		}
		removeTree(filepath.Join(parent, name))
	}
}
