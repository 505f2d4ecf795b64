package store

// SetBeforeWrite installs a hook that runs once between a push's read of a
// key and its write, to stage a concurrent publisher.
func SetBeforeWrite(pb *Publisher, f func()) {
	pb.beforeWrite = func() {
		pb.beforeWrite = nil
		f()
	}
}

// MaxChans is how many projects' change channels a provider keeps.
const MaxChans = maxChans
