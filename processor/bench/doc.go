// Package bench measures the processor under load next to the floor it
// cannot beat. It holds what `skillstream bench` runs; the command only
// parses flags, wires the configuration into a Plan and a Consumer, and
// prints the Report.
//
//   - The load generator (RunPhase) plays agent sessions through the real
//     wire protocol with the worker client: pre-steps, skill calls, catalog
//     changes on disk while sessions are in flight.
//   - The baseline (StartBaseline) is a hand-written consumer doing only the
//     JetStream work each trigger implies, on its own stream: the floor.
//   - The consumer under test runs in this process (StartProcessor), as a
//     child process measured on its own (StartChild, and Serve on the
//     child's side), or is an external processor that is not measured.
//   - Measure runs one phase: start the consumer, play the load, sample its
//     CPU and memory, stop it; FormatReport renders the phases and their
//     processor/baseline ratios.
//
// The package sits beside the processor because it drives the real
// processor, its metrics and the real worker client exactly as a fleet
// would; nothing in the processor imports it.
package bench
