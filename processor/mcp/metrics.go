package mcp

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
)

// methods are the method label values; any other method counts as "other",
// so a client cannot grow the label set.
var methods = map[string]bool{
	"initialize": true, "ping": true, "server/discover": true,
	"skills/list": true, "skills/get": true,
	"resources/list": true, "resources/read": true, "resources/templates/list": true,
	"resources/directory/read": true, "tools/list": true, "tools/call": true,
	"prompts/list": true, "subscriptions/listen": true,
	"notifications/initialized": true,
}

type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	errors   *prometheus.CounterVec
	refused  *prometheus.CounterVec
}

func newMetrics(r prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillstream_mcp_requests_total", Help: "MCP requests handled, by method.",
		}, []string{"method"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "skillstream_mcp_request_duration_seconds", Help: "Time to answer an MCP request, by method.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"method"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillstream_mcp_errors_total", Help: "MCP requests answered with a JSON-RPC error, by method and error code.",
		}, []string{"method", "code"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillstream_mcp_http_refused_total", Help: "MCP HTTP requests refused before reaching the protocol, by reason.",
		}, []string{"reason"}),
	}
	if r == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.errors, m.refused} {
		if err := r.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observe counts and times every request and logs refused ones at debug.
func (s *Server) observe(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		label := method
		if !methods[label] {
			label = "other"
		}
		start := time.Now()
		res, err := next(ctx, method, req)
		s.metrics.requests.WithLabelValues(label).Inc()
		s.metrics.latency.WithLabelValues(label).Observe(time.Since(start).Seconds())
		if err != nil {
			code := int64(jsonrpc.CodeInternalError)
			var je *jsonrpc.Error
			if errors.As(err, &je) {
				code = je.Code
			}
			s.metrics.errors.WithLabelValues(label, strconv.FormatInt(code, 10)).Inc()
			if code == jsonrpc.CodeInternalError {
				s.log.Warn("mcp request failed", "method", label, "code", code, "err", err)
			} else { // the client's request was refused
				s.log.Debug("mcp request refused", "method", label, "code", code, "err", err)
			}
		}
		return res, err
	}
}
