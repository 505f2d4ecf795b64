// Command goclient runs requests through the Go worker client
// (events/client) and prints its answers, so that the TypeScript client's
// tests and benchmark can hold the two clients side by side against one
// real serve.
//
//	goclient -url nats://127.0.0.1:4222 [-encoding json] run < requests.jsonl
//	goclient -url nats://127.0.0.1:4222 bench -n 200 -cwd DIR
//	goclient natsd -config FILE -store DIR
//
// run reads one request per line, {"op":"preStep"|"callSkill"|"compact",
// "payload":{...}} with the payload in the wire's JSON form, and prints
// one line per request: {"answer":<the answer in the wire's JSON form>}
// or {"error":"..."} (with the answer too when the client returned one).
// bench times n pre-steps of one session, one at a time, and prints
// {"n":..,"p50Ms":..,"p90Ms":..}. natsd runs a NATS server from the
// configuration file FILE (its accounts, users and permissions), on a free
// loopback port with its JetStream store in DIR, prints {"url":...} once
// it takes connections and runs until its standard input closes.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "goclient:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("goclient", flag.ContinueOnError)
	url := fs.String("url", "nats://127.0.0.1:4222", "NATS server")
	encoding := fs.String("encoding", "msgpack", "msgpack or json")
	n := fs.Int("n", 200, "bench: pre-steps to time")
	cwd := fs.String("cwd", "", "bench: the pre-steps' cwd")
	session := fs.String("session", "go-bench", "bench: the session")
	config := fs.String("config", "", "natsd: the NATS server's configuration file")
	store := fs.String("store", "", "natsd: the JetStream store folder")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.Arg(0) == "natsd" {
		// The same flags parsed after the command.
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return err
		}
		return natsd(*config, *store, stdin, stdout)
	}
	enc := events.Msgpack
	if *encoding == "json" {
		enc = events.JSON
	}
	c, err := client.Connect(*url, client.WithEncoding(enc), client.WithRetryInterval(500*time.Millisecond))
	if err != nil {
		return err
	}
	defer c.Close()
	switch fs.Arg(0) {
	case "run":
		return runRequests(c, stdin, stdout)
	case "bench":
		// The same flags parsed after the command.
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return err
		}
		return bench(c, *n, *cwd, *session, stdout)
	}
	return fmt.Errorf("want a command: run, bench or natsd")
}

// natsd runs a NATS server configured by the file config, with only its
// address (a free loopback port) and its JetStream store folder replaced,
// prints its URL and runs until stdin closes.
func natsd(config, store string, stdin io.Reader, stdout io.Writer) error {
	if config == "" || store == "" {
		return errors.New("natsd: want -config and -store")
	}
	opts, err := server.ProcessConfigFile(config)
	if err != nil {
		return fmt.Errorf("natsd: %w", err)
	}
	opts.StoreDir = store
	opts.Host, opts.Port = "127.0.0.1", server.RANDOM_PORT
	opts.NoLog, opts.NoSigs = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("natsd: %w", err)
	}
	srv.Start()
	defer func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	}()
	if !srv.ReadyForConnections(30 * time.Second) {
		return errors.New("natsd: server not ready")
	}
	if err := json.NewEncoder(stdout).Encode(map[string]string{"url": srv.ClientURL()}); err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, stdin)
	return err
}

type request struct {
	Op      string          `json:"op"`
	Payload json.RawMessage `json:"payload"`
}

type reply struct {
	Answer json.RawMessage `json:"answer,omitempty"`
	Seq    uint64          `json:"seq,omitempty"`
	Error  string          `json:"error,omitempty"`
}

func runRequests(c *client.Client, stdin io.Reader, stdout io.Writer) error {
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 0, 64*1024), events.MaxPayloadSize*2)
	out := json.NewEncoder(stdout)
	for sc.Scan() {
		var req request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return fmt.Errorf("request %q: %w", sc.Text(), err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		r, err := do(ctx, c, req)
		cancel()
		if err != nil {
			r.Error = err.Error()
		}
		if err := out.Encode(r); err != nil {
			return err
		}
	}
	return sc.Err()
}

func do(ctx context.Context, c *client.Client, req request) (reply, error) {
	var r reply
	var answer any
	var err error
	switch req.Op {
	case "preStep":
		var ps events.PreStep
		if ps, err = events.DecodePreStep(events.JSON, withV(req.Payload)); err != nil {
			return r, err
		}
		answer, err = c.PreStep(ctx, ps)
	case "callSkill":
		var sc events.SkillCall
		if sc, err = events.DecodeSkillCall(events.JSON, withV(req.Payload)); err != nil {
			return r, err
		}
		answer, err = c.CallSkill(ctx, sc)
	case "compact":
		var cp events.Compaction
		if cp, err = events.DecodeCompaction(events.JSON, withV(req.Payload)); err != nil {
			return r, err
		}
		r.Seq, err = c.Compact(ctx, cp)
		return r, err
	default:
		return r, fmt.Errorf("unknown op %q", req.Op)
	}
	if answer != nil {
		b, eerr := events.Encode(events.JSON, answer)
		if eerr != nil {
			return r, errors.Join(err, eerr)
		}
		r.Answer = b
	}
	return r, err
}

// withV adds "v":1 to a payload that lacks it, as the clients do.
func withV(p json.RawMessage) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(p, &m) != nil {
		return p
	}
	if _, ok := m["v"]; !ok {
		m["v"] = json.RawMessage("1")
	}
	b, _ := json.Marshal(m)
	return b
}

func bench(c *client.Client, n int, cwd, session string, stdout io.Writer) error {
	tools := []events.Tool{{Name: "bash", Owner: "bench"}, client.SkillTool("skillstream")}
	took := make([]time.Duration, 0, n)
	for i := range n + 10 { // the first 10 warm up
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		start := time.Now()
		_, err := c.PreStep(ctx, events.PreStep{Session: session, Step: strconv.Itoa(i), Cwd: cwd, Tools: tools})
		d := time.Since(start)
		cancel()
		if err != nil {
			return err
		}
		if i >= 10 {
			took = append(took, d)
		}
	}
	slices.Sort(took)
	ms := func(q float64) float64 { return float64(took[int(q*float64(len(took)-1))].Microseconds()) / 1000 }
	return json.NewEncoder(stdout).Encode(map[string]any{"n": n, "p50Ms": ms(0.5), "p90Ms": ms(0.9)})
}
