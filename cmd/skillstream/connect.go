package main

import (
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go"
)

// connectOptions builds the client options for --nats-url from the
// configuration. The connection reconnects forever; it is closed by the
// command that opened it.
func (c *Config) connectOptions(log *slog.Logger) ([]nats.Option, error) {
	opts := []nats.Option{
		nats.Name("skillstream " + c.ToolOwner),
		nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("NATS reconnected", "url", nc.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("NATS asynchronous error", "subject", subject, "err", err)
		}),
	}
	if c.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(c.InboxPrefix))
	}
	switch {
	case c.tenantAuth != nil:
		creds, err := c.tenantAuth.options()
		if err != nil {
			return nil, fmt.Errorf("tenant %s: %w", c.Tenant, err)
		}
		opts = append(opts, creds...)
	case c.NATSUser != "":
		opts = append(opts, nats.UserInfo(c.NATSUser, c.NATSPassword))
	case c.NATSToken != "":
		opts = append(opts, nats.Token(c.NATSToken))
	case c.NATSNKey != "":
		o, err := nats.NkeyOptionFromSeed(c.NATSNKey)
		if err != nil {
			return nil, fmt.Errorf("read --nats-nkey %s: %w", c.NATSNKey, err)
		}
		opts = append(opts, o)
	case c.NATSCreds != "":
		opts = append(opts, nats.UserCredentials(c.NATSCreds))
	}
	if c.NATSTLSCA != "" {
		opts = append(opts, nats.RootCAs(c.NATSTLSCA))
	}
	if c.NATSTLSCert != "" {
		opts = append(opts, nats.ClientCert(c.NATSTLSCert, c.NATSTLSKey))
	}
	return opts, nil
}
