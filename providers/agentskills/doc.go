// Package agentskills is the filesystem skill provider: it serves skills
// laid out as Agent Skills folders and keeps up with edits without a
// restart.
//
// # Folders and ranks
//
// For a working directory, the project root is the nearest ancestor (the
// directory itself included) that holds a .git entry, else the directory
// itself; without a working directory there is no project root. While it
// watches, the provider remembers each working directory's root and
// watches the folders from the directory up to that root (up to "/" when
// there is none): a .git created or removed on the way, or a folder of the
// way renamed or replaced, makes it look again, so a `git init` in a
// subfolder moves the root like any other change is picked up. The folders
// searched, in rank order, are:
//
//   - <project>/.agents/skills, then the other Config.ProjectDirs (source
//     "project", ranks providers.RankProject+i);
//   - Config.CustomDirs (source "custom", providers.RankCustom+i);
//   - the user folder, ~/.agents/skills unless Config.UserDir says otherwise
//     (source "user", providers.RankUser).
//
// Bundled skills are the separate bundled provider, ranked after these.
//
// # Skills in a folder
//
// A directory <d> holding <d>/SKILL.md is a skill whose resource base is
// <d>; a file <folder>/<x>.md is a skill whose resource base is the folder.
// Only one level is looked at, entries whose names start with "." are
// ignored, and within a folder candidates come in file name order.
// A flat .md file that does not start with a `---` line (a README.md
// beside the skills) is not meant as a skill: it is ignored, without a
// diagnostic. Symbolic links are followed unless Config.NoFollowSymlinks;
// dangling links, link loops and links to anything but a directory or
// regular file are skipped with a diagnostic. Without following, a skills
// folder that is itself a link, or lies below a linked folder of its
// project (.agents -> elsewhere), is not read either (a diagnostic names
// the link). Only the configured folders and the
// targets of links inside them are read; skill names are looked up among
// the files found, never turned into paths.
//
// # The file format
//
// Parse and ParseFile read a skill file: YAML frontmatter between a first
// line `---` and the next line that is exactly `---` (CRLF tolerated; a
// line `----` is not a delimiter), then the body, trimmed. name (the skill
// name grammar) and description (a non-empty string) are required;
// whenToUse or when_to_use, metadata (a mapping), license, compatibility
// and allowed-tools are optional. disable-model-invocation and
// user-invocable accept YAML booleans, 1/0 and true|yes|on / false|no|off
// in any case, quoted or not. Any other value, an unknown type, or a
// legacy key (disableModelInvocation, modelInvocable, userInvocable) makes
// the file invalid. An invalid file is dropped with a Diagnostic (path and
// reason) and never hides the valid files beside it. ScanFolder and
// ScanSkill read a folder or one skill exactly as the provider does, with
// all their diagnostics, for a validate command; they also report what
// the Agent Skills specification refuses though the provider serves it
// (Found.Problems, from Document.Check: a name other than the folder's, a
// description over 1024 characters, a compatibility over 500) and skill
// files named SKILL.md in another case (CheckFileName), which the
// provider does not read. YAML errors name the line of the file.
//
// # Completeness
//
// A missing folder or a file deleted meanwhile is a confirmed absence: a
// complete, empty answer. Any other I/O error (an unreadable folder, a
// SKILL.md that is a directory) is returned by List, which makes the
// registry's snapshot incomplete; the candidates of the other folders are
// returned with it.
//
// # Hot refresh and caching
//
// Each folder's answer is cached with the parse of every file. The first
// List of a folder watches it — every folder above it (so
// the folder appearing, or moving away when one of them is renamed, is
// seen), the folder, every directory in it, and every linked file. A
// folder whose skill directories and linked files would take more than
// Config.MaxWatchesPerFolder watches keeps the watches above and on
// itself only, and is listed again every Config.PollInterval instead
// (poll.go); Polled names such folders. A file event marks its folder
// stale and the files it names as changed; the next List lists the folder
// again and re-reads only changed files (same inode, size, mtime and ctime
// means unchanged). A burst of events gathered over Config.Debounce sends
// one notification: the channel from Changes for the affected projects is
// closed (for all projects when a custom or the user folder changed).
// Watched projects are bounded by Config.MaxProjects (least recently used
// dropped, its watches removed). Dropping a project is not a change: the
// channel handed out for it stays open, and the next Changes returns a new
// one (see providers.Notifier). When the watcher cannot start or a watch
// cannot be added, that folder is listed again on every List, validating
// the cached parses by stat, and Changes returns a closed channel so that
// nobody caches. Stats counts reads, parses, listings and the folder walks
// of Load: an unchanged, watched tree costs none.
//
// With Config.Logger, every dropped file is logged as a warning, once per
// version of the file.
//
// # Fresh listings (read-your-writes)
//
// A change to a watched skills folder that completed before a call to
// Changes, List, Load, LoadQuick or Diagnostics began is in that call's
// answer: a skill folder or file written, renamed, created or removed, a
// description edited, a skills folder (or a .git that moves a project
// root) appearing on the way to a remembered working directory. On Linux
// the listings' watcher is an inotify instance of the provider's own
// (listwatch_linux.go), and each of those calls first reads its queue
// without blocking and applies every event in it; a burst of events
// waiting for its debounce is announced at once. The kernel queues an
// event before the system call that made the change returns, so nothing
// completed earlier can be missed; a watched tree with no change costs one
// read of an empty queue. The debounce still gathers the events of a burst
// that arrive after such a call. A working directory or project never seen
// before is listed when first asked for, so it is fresh too.
//
// Limits: a change made through another kernel (a network or FUSE file
// system, a container's overlay seen from outside) raises no event here;
// a folder over Config.MaxWatchesPerFolder sees skills added or removed at
// once but edits inside its skill folders only at the next poll; and where
// inotify is missing (other systems, where fsnotify watches) the queue
// cannot be read on demand, so a change is seen once the watcher has
// delivered it. Config.NoWatch avoids all three: every call then lists
// the folders again, validating cached parses by stat.
//
// # Load and digests
//
// Load finds the winning file through the cached listing. Its parse is
// kept while the file's identity (inode, size, mtime, ctime) is unchanged,
// so a warm Load costs one stat and body edits are seen at once. The skill
// comes with its digest (see Digest): a flat file's is kept with the same
// identity. A skill folder's digest covers every file below it but hidden
// ones (names starting with a dot, version control folders among them:
// what skills push publishes by default, so the folder pushed has the
// same digest), so checking identities would mean walking the folder on
// every Load;
// instead, on Linux, each folder and file of a loaded skill folder gets an
// inotify watch of its own (a second instance, apart from the listing's),
// and the digest is kept while none of them reported an event and the
// folder's path still names the same directory. The event queue is read,
// without blocking, before a kept digest is served: the kernel queues an
// event before the call that made the change returns, so any change made
// before a Load began, anywhere in the folder (nested subfolders, files
// added, removed or renamed, content rewritten at the same size and
// mtime, a file changed through a hard link from elsewhere, the folder
// replaced or its link retargeted), is in that Load's digest. A warm Load
// of a folder skill thus costs two stats and one read. A folder is walked
// on every Load instead (a readdir of each subfolder, a stat of each file,
// the digest kept while paths and identities are unchanged) when watching
// is off or unavailable, when it holds a symbolic link (its target may
// move with folders nobody watches), when it lies on a network or FUSE
// file system or spans several, or when its watches do not fit: the
// watches of all kept digests are bounded by Config.MaxWatchesPerFolder,
// the least recently used digests giving theirs up first.
//
// # Where the code lives
//
// provider.go holds the API (Config, New, Changes, List, Load,
// Diagnostics, Close); projects.go the tracked projects, their skills
// folders and change channels; rootmemo.go the remembered project roots
// of working directories; folder.go the cached answer of one skills
// folder and the scan renewing it; scan.go the folder walk itself, shared
// with ScanFolder and ScanSkill; watch.go the file watches, the event
// loop and the debounced notification; poll.go the folders over the watch
// bound; listwatch_linux.go (listwatch_other.go elsewhere) the watcher
// behind the listings; loadcache.go the parsed bodies and digests Load
// reuses, and treewatch_linux.go the inotify watches that keep those
// digests. The
// bounded sets (tracked projects, remembered roots, loaded bodies and
// digests) are LRUs from github.com/hashicorp/golang-lru/v2, in the
// simplelru form: the provider's own locks guard them with the state an
// eviction changes.
package agentskills
