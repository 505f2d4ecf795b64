package store

import "time"

// SetBeforeWrite installs a hook that runs once between a push's read of a
// key and its write, to stage a concurrent publisher.
func SetBeforeWrite(pb *Publisher, f func()) {
	pb.beforeWrite = func() {
		pb.beforeWrite = nil
		f()
	}
}

// SetBeforeDelete installs a hook that runs before Collect removes each
// object, to stage a concurrent publisher.
func SetBeforeDelete(pb *Publisher, f func()) { pb.beforeDelete = f }

// SetNow sets the clock a publisher reads.
func SetNow(pb *Publisher, now func() time.Time) { pb.now = now }

// MaxChans is how many projects' change channels a provider keeps.
const MaxChans = maxChans

// ArchiveOf is the archive a Local would publish.
func ArchiveOf(l Local) []byte { return l.archive }

// SetWarnEvery sets the period of a provider's warning rate limits.
func SetWarnEvery(cfg *Config, d time.Duration) { cfg.warnEvery = d }
