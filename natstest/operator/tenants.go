package operator

import (
	"strings"

	"github.com/nats-io/jwt/v2"
)

// The permissions of skillstream's shipped multi-tenant server
// configuration (deploy/tenants.conf), as user JWT permissions. The
// manual's nsc commands give the same lists.
var (
	// ProcessorPublish is what a tenant's processor user may publish.
	// With serve --partitions it also appends under evp.> and keeps one
	// usage bucket per partition (the shipped lists name four).
	ProcessorPublish = []string{"ev.>", "evp.>", "$KV.USAGE-0.>", "$KV.USAGE-1.>", "$KV.USAGE-2.>", "$KV.USAGE-3.>",
		"$JS.API.>", "$JS.ACK.>", "$JS.FC.>", "_INBOX.>", "_R_.>", "_SKILLSTREAM_INBOX.>",
		"skillstream.>", "$SRV.INFO.skillstream", "$KV.USAGE.>", "$SYS.REQ.USER.INFO"}
	// ProcessorSubscribe is what a tenant's processor user may subscribe to.
	ProcessorSubscribe = []string{"_SKILLSTREAM_INBOX.>", "skillstream.>", "$SRV.>"}
	// AdminDeny is what a tenant's administrator may not publish: the
	// requests that delete, replace, update, pause or reset the
	// processors' stream (SESSIONS) and durable consumer (skillstream).
	AdminDeny = []string{
		"$JS.API.STREAM.DELETE.SESSIONS",
		"$JS.API.STREAM.UPDATE.SESSIONS",
		"$JS.API.STREAM.PURGE.SESSIONS",
		"$JS.API.STREAM.RESTORE.SESSIONS",
		"$JS.API.CONSUMER.CREATE.SESSIONS",
		"$JS.API.CONSUMER.CREATE.SESSIONS.skillstream",
		"$JS.API.CONSUMER.CREATE.SESSIONS.skillstream.>",
		"$JS.API.CONSUMER.DURABLE.CREATE.SESSIONS.skillstream",
		"$JS.API.CONSUMER.DELETE.SESSIONS.skillstream",
		"$JS.API.CONSUMER.PAUSE.SESSIONS.skillstream",
		"$JS.API.CONSUMER.RESET.SESSIONS.skillstream",
	}
	// TenantServices are the services a tenant's account exports to its
	// workers' account: its triggers, its tool definitions and direct
	// reads of its object store.
	TenantServices = []string{
		"ev.*.agent.pre-step",
		"ev.*.tool.call.skill",
		"ev.*.tool.call.skill_search",
		"ev.*.context.compact",
		"skillstream.tool.definition",
		"skillstream.tool.definitions",
		"$JS.API.DIRECT.GET.OBJ_SKILLS",
		"$JS.API.DIRECT.GET.OBJ_SKILLS.>",
	}
	// TenantStreams are the streams a tenant's account exports to its
	// workers' account: the answers on the workers' inboxes.
	TenantStreams = []string{"_INBOX.>"}
	// LibraryServices are what the library exports to every tenant's
	// workers: direct reads of its objects.
	LibraryServices = []string{"$JS.API.DIRECT.GET.OBJ_LIBRARY", "$JS.API.DIRECT.GET.OBJ_LIBRARY.>"}
	// LibraryReaderPublish is what serve's library reader may publish.
	LibraryReaderPublish = []string{"$JS.API.INFO", "$JS.API.STREAM.INFO.KV_LIBRARY", "$JS.API.STREAM.INFO.OBJ_LIBRARY",
		"$JS.API.STREAM.CREATE.KV_LIBRARY", "$JS.API.STREAM.CREATE.OBJ_LIBRARY",
		"$JS.API.CONSUMER.CREATE.KV_LIBRARY.>", "$JS.API.CONSUMER.CREATE.OBJ_LIBRARY.>",
		"$JS.API.CONSUMER.DELETE.KV_LIBRARY.>", "$JS.API.CONSUMER.DELETE.OBJ_LIBRARY.>",
		"$JS.API.DIRECT.GET.KV_LIBRARY.>", "$JS.API.DIRECT.GET.OBJ_LIBRARY.>",
		"$JS.API.DIRECT.GET.KV_LIBRARY", "$JS.API.DIRECT.GET.OBJ_LIBRARY",
		"$JS.API.STREAM.MSG.GET.KV_LIBRARY", "$JS.API.STREAM.MSG.GET.OBJ_LIBRARY",
		"$JS.FC.>", "$JS.ACK.>", "_SKILLSTREAM_INBOX.>", "$SYS.REQ.USER.INFO"}
)

// WorkerPublish is what a tenant's worker may publish: its tenant's
// services and the library's, nothing else.
func WorkerPublish() []string {
	return append(append([]string{}, TenantServices...), LibraryServices...)
}

// WorkerPermissions are a worker's: publish its tenant's imports, and
// receive only on its own inboxes, _INBOX.<user>.
func WorkerPermissions(user string) jwt.Permissions {
	return jwt.Permissions{Pub: jwt.Permission{Allow: WorkerPublish()}, Sub: jwt.Permission{Allow: []string{"_INBOX." + user + ".>"}}}
}

// Library is the shared library's account and its users' credentials.
type Library struct {
	Account *Account
	// Reader is serve's (library-reader), Curator the one who pushes.
	Reader, Curator string
}

// NewLibrary makes the LIBRARY account (JetStream: 4 GiB of file, 64
// MiB of memory) exporting direct reads of its objects, with its reader
// and curator.
func NewLibrary(o *Operator) *Library {
	a := o.NewAccount("LIBRARY")
	a.Claims.Limits.JetStreamLimits = jwt.JetStreamLimits{DiskStorage: 4 << 30, MemoryStorage: 64 << 20, Streams: jwt.NoLimit, Consumer: jwt.NoLimit, MaxAckPending: jwt.NoLimit}
	a.Export(jwt.Service, LibraryServices...)
	return &Library{Account: a,
		Reader:  a.User("library-reader", jwt.Permissions{Pub: jwt.Permission{Allow: LibraryReaderPublish}, Sub: jwt.Permission{Allow: []string{"_SKILLSTREAM_INBOX.>"}}}),
		Curator: a.User("curator", jwt.Permissions{}),
	}
}

// Tenant is one tenant: its account (NAME), its workers' account
// (NAME_WORKERS) and its users' credentials.
type Tenant struct {
	Name             string
	Account, Workers *Account
	// Processor is serve's user, Admin the tenant's administrator.
	Processor, Admin string
}

// NewTenant makes tenant name's two accounts, as deploy/tenants.conf's
// ACME and ACME_WORKERS: the tenant's account with JetStream (8 GiB of
// file, 256 MiB of memory, 16 streams, 64 consumers), a processor user
// and an administrator denied the processors' stream and consumer; the
// workers' account without JetStream (64 KiB payloads, 512 connections,
// 50,000 subscriptions) importing the tenant's services and inboxes and,
// with lib, the library's object reads. Workers are added with Worker.
// Neither account is known to a server until started or pushed.
func NewTenant(o *Operator, lib *Library, name string) *Tenant {
	up := strings.ToUpper(name)
	a := o.NewAccount(up)
	a.Claims.Limits.JetStreamLimits = jwt.JetStreamLimits{DiskStorage: 8 << 30, MemoryStorage: 256 << 20, Streams: 16, Consumer: 64, MaxAckPending: jwt.NoLimit}
	a.Export(jwt.Service, TenantServices...)
	a.Export(jwt.Stream, TenantStreams...)
	w := o.NewAccount(up + "_WORKERS")
	w.Claims.Limits.Payload = 64 << 10
	w.Claims.Limits.Conn = 512
	w.Claims.Limits.Subs = 50000
	w.Import(a, jwt.Service, TenantServices...)
	w.Import(a, jwt.Stream, TenantStreams...)
	if lib != nil {
		w.Import(lib.Account, jwt.Service, LibraryServices...)
	}
	return &Tenant{Name: name, Account: a, Workers: w,
		Processor: a.User(name+"-processor", jwt.Permissions{Pub: jwt.Permission{Allow: ProcessorPublish}, Sub: jwt.Permission{Allow: ProcessorSubscribe}}),
		Admin:     a.User(name+"-admin", jwt.Permissions{Pub: jwt.Permission{Deny: AdminDeny}}),
	}
}

// Worker makes a worker user of the tenant called user (its inboxes
// are _INBOX.<user>) and returns its credentials file.
func (t *Tenant) Worker(user string) string {
	return t.Workers.User(user, WorkerPermissions(user))
}
