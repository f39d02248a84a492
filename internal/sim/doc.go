// Package sim is runfleet's deterministic fault simulation: the real
// engine, over the real embedded store and queue (one bbolt file in a
// temporary directory), against a simulated GitHub and a simulated cloud
// that misbehave the way the real ones do, on a virtual clock, with the
// runfleet process crashing between any two writes. A seed replays
// exactly.
//
// # Running it
//
//	go test ./internal/sim -run 'TestSimulation$'                    # 200 seeds × 50 jobs (make test)
//	go test ./internal/sim -run 'TestSimulation$' -short             # 20 seeds × 30 jobs
//	go test ./internal/sim -run 'TestSimulation$' -seed 31 -jobs 50  # replay one seed, engine logs in the trace
//	go test ./internal/sim -run 'TestSimulation$' -seed 31 -simtrace # … printing every trace line as it happens
//	go test ./internal/sim -run 'TestSimulation$' -lifecycles 1000000 -timeout 4h   # make sim
//	go test ./internal/sim -run 'TestSimulation$' -seeds 600 -firstseed 201         # explore other seeds
//	go test ./internal/sim -run TestSimulationServerless             # DynamoDB Local + moto SQS
//	go test ./internal/sim -run 'TestSimulationScaleSet$'            # 200 seeds × 30 jobs with a scale set (make test)
//	go test ./internal/sim -run 'TestSimulationScaleSet$' -seed 35   # replay one (-ssjobs 30 is the default)
//	go test ./internal/sim -run 'TestSimulationScaleSet$' -sseeds 1000 -ssfirstseed 201  # explore
//
// A failing seed prints the broken invariants, the line that replays it,
// and the trace: the lines about the violation's subject (its job, its
// instance, its machine), then the last lines before it. Every line names
// the task it comes from ([worker-2], [webhook <delivery id>], [reconcile],
// [start] for a start's recovery, [operator …]). The run goes on after a
// violation (to find more, and to keep the figures whole); the report
// keeps the trace as it was at the first one. TestSimulation logs the
// figures of all seeds (faults injected by kind, jobs, machines, calls,
// crashes) and, per invariant, the seeds that broke it.
//
// # One thread of control, many tasks
//
// The simulation runs the engine as `runfleet serve` does — webhook
// intakes, four queue workers and a reconcile pass every 30 s, all at once
// — but only one of them moves at a time. Each is a task (a goroutine) that
// runs only while the scheduler has handed it the turn, and hands it back
// at every port call: every store and queue call, every GitHub and
// provider call. Which waiting task goes next is the seeded generator's
// choice, so a worker's read and its compare-and-set can be split by
// another worker's write, a webhook can land between a create's JIT
// registration and its machine, and yet the run is a pure function of the
// seed. GitHub and provider calls also take virtual time (tens of
// milliseconds to seconds) during which everything else runs. Virtual time
// moves only when no task can run: the clock jumps to the next event (a
// delivery, a boot, a job's end, a timer). The engine gets the clock as
// Options.Now, the queue as local.Options.Now and the store as
// bolt.WithClock; all randomness comes from one math/rand/v2 PCG seeded
// with the seed (the engine's own, for warm runner names, through
// Options.Rand); maps are iterated in sorted order. TestSimulationIsDeterministic
// runs seeds twice and compares hashes of the whole traces.
//
// The engine's download cache makes concurrent creates wait on a channel
// for the one that lists (engine/downloads.go); a task parked there would
// never get the turn back, so the simulated RunnerDownloads answers within
// its caller's turn. The engine's contexts carry real-time deadlines,
// which never expire in a run: a hung provider call instead waits out the
// caller's timeout on the virtual clock and returns
// context.DeadlineExceeded. A task that keeps the turn for two minutes of
// real time fails the run (a loop that never calls a port).
//
// # The world
//
// GitHub (github_world.go, github_api.go, webhooks.go) behaves like GitHub,
// not like the engine's wishes. It hands a queued job to ANY idle online
// runner whose labels cover the job's — a linux job often takes a gpu
// runner, and jobs regularly run on runners made for others — oldest job
// first, to a random such runner. A job a runner does not start within 60 s
// goes back to the queue (a runner whose machine vanished still looks
// online for 30–90 s); a job queued 24 hours is cancelled; an ephemeral
// runner runs one job and deregisters itself; a runner whose machine
// vanishes mid-job looks busy for 10 minutes, then the job fails. Jobs are
// cancelled while queued (5 %), held for approval queued → waiting →
// queued (5 %), and some match no pool (another architecture, another
// organization) and must be left alone. A quarter of the seeds also have
// runners runfleet did not register at the organization — a static
// machine, and a runner of another runfleet installation (runfleet's name
// prefix, another controller label) — which take jobs too.
//
// Every workflow_job event is delivered through a fault model, each fault
// with its own probability: dropped (5 %), duplicated (10 %), delayed by
// 10 s – 10 min instead of under 2 s (10 %, which also reorders), and
// redelivered later with the same delivery id (5 %, as an operator's or a
// script's redelivery). GitHub never retries: a delivery that finds the
// process down gets a 503 and is lost unless redelivered.
//
// The REST API (the github.GitHub port, as the production adapter presents
// it) answers 5xx before the effect (5 %), 5xx after it — the runner was
// registered or removed anyway — (3 %), 429 with Retry-After (2 %), 404 for
// what is gone, 409 for a runner name held by a busy or foreign runner (the
// adapter clears an idle one of ours and retries, as internal/github/rest
// does), 422 for removing a runner that has a job, and, in runner
// listings, busy:false for a runner that is running one (20 % of such
// readings).
//
// The cloud (cloud.go, provider_api.go) fails 30 % of creates, deletes and
// lists, half of them after the effect (a machine made, or destroyed, and
// an error returned); hangs 2 % of calls past the caller's timeout (half of
// them take effect); boots machines in 20–90 s, or slowly in 4–9 minutes
// (5 %); takes machines back (spot interruption: 5 % of machines, 30 s –
// 8 min after they were made, booting, idle or under a job); and its gpu
// pool answers a delete by name with success and does nothing, as
// garm-provider-aws does. A machine boots with the JIT registration that
// held its name when it was made: it comes online only if that
// registration still exists and no other machine used it.
//
// A spot interruption (spot.go) reaches runfleet as it does on AWS: on
// half the seeds EC2's two-minute warning is handed to the engine's
// HandleInterruption (EventBridge; 30 % of warnings are delivered twice,
// one that finds the process down is lost), and on every seed the
// provider lists the machine, once it is gone and for an hour, through
// ListInterrupted, which serve's reconcile passes poll. A job running on
// the machine fails once GitHub has lost its runner; runfleet owes it one
// re-run. GitHub's re-run job API (github_rerun.go) makes a new attempt
// of the run — a new job, new id, next run_attempt, queued, its webhooks
// delivered through the same faults — and refuses (403) while an attempt
// of the run is queued, waiting or running.
//
// # Crashes
//
// The process dies at a store or queue write (0.05 % of writes, half
// before the write, half right after it is durable) and during a provider
// call (0.5 %, the effect happening or not); a GitHub or provider call in
// flight when the process dies may still take effect. Every task of the
// dead process is unwound (each of its port calls fails from then on), the
// state file is closed, and 1–10 s later a new process opens it, builds a
// new engine and reads what its predecessor left in flight
// (engine.LeftInFlight); then, as serve does, it takes webhooks, work and
// reconcile ticks while the recovery of what it read runs beside them (a
// task of its own, [start]). Nothing in memory survives; GitHub and the
// cloud carry on throughout.
//
// # Replicas and a store outage (issue #32)
//
// Every sixth seed (3, 9, 15, …) runs runfleet as three `serve` replicas over one
// shared store and queue, as on PostgreSQL (replicas.go, replicaWorld):
// the primary takes the webhooks, reconciles and runs the listener and
// four workers; two more replicas run four workers each, over engines of
// their own. The state is opened once and outlives every process. A
// replica dies abruptly — at a store or queue write (before it, or right
// after it is durable: after a provider call and before its store write,
// between two store writes, after the last one and before the ack),
// during a provider call — four times as often as the single process
// does, with only its own tasks; the messages its workers held come back
// when their visibility runs out, as SQS's and the PostgreSQL queue's do,
// and the others carry on. A replica restarts 1–10 s later; no start
// reads the work left in flight (serve does so only on a store it owns
// alone). The replicas share GitHub's budget, as serve shares it through
// the store.
//
// Half of those seeds also see the store go down for 2–40 s of their
// load phase (outage.go): every store and queue call of every process
// fails, and 30 % of the writes made then take effect with their answer
// lost (a commit whose reply the broken connection never brought back).
// No process dies; the store comes back by itself.
//
// The workers are serve's (engine.Engine.Work): a message's work runs
// under a deadline of its visibility (each try a real-time deadline of
// what is left of it on the virtual clock, which the engine's claims
// read; it never expires in a run), and a failed message
// is done again 1, 2, 4 and 8 s later while it is still the worker's,
// then left for redelivery.
//
// Capacity held by dead work is an invariant of every seed (deadwork.go):
// an instance in creating or deleting whose work nobody is doing — the
// task at it died with its process, or let it go (a worker leaving its
// message for redelivery, a task ending with the instance still there) —
// must move on (a write that changes its status, or a re-claim by a
// worker whose message names it or by a scan of dead work) within its
// bound of the fault: with replicas liveDeadWorkBound, 30 s — each
// replica holds a liveness lease through the real leader.Liveness on the
// virtual clock, its claims name it, and every replica takes over the
// work of a lapsed one every 3 s (liveness.go), as serve does — not
// counting time the store was unreachable; a process alone on its store
// holds no liveness, and its bound is deadWorkBound, the visibility
// timeout plus the takeover grace, 6 minutes. A worker that takes such
// work in hand and lets go of it without a write leaves it dead since the
// first fault; one whose process dies leaves it dead since that death.
// -deadwork D holds every seed to D. TestInvariantsCatchDeadWork shows the
// check fails a run: replicas without the scan of dead work (or that also
// drop a redelivered create as stale) break it at the first replica seed.
//
// # Invariants
//
// After every step (store-side ones after every step that wrote an
// instance, the others as the cloud and GitHub act):
//
//   - never two live machines for one instance;
//   - never more than max_runners live instances, or live machines, per
//     pool (a machine still running for a deleted record counts, except
//     one an operator's forced delete gave up on: a forced delete
//     completes whatever the provider says (P8) and leaves that machine to
//     the reconciler, and quiescence requires it gone);
//   - never a machine destroyed while its runner runs a job, unless an
//     operator force-deleted that instance (the simulation's operator
//     force-deletes a random live instance now and then);
//   - at most one instance serves a job attempt at a time: of the live
//     instances made for a job, not on their way out and not running
//     another job, never more than one (P2, P17);
//   - never a runner removed that runfleet did not register;
//   - no create asks for spot (CreateRequest.OnDemandOnly false) once its
//     pool's spot breaker record is open (checked as the create reaches
//     the provider; a create decided at the very instant of the trip is
//     not held to it);
//   - no secondary-limit refusal unless injected as a fault: GitHub's
//     limit (per installation, sliding 60 s, penalties calls extend) never
//     refuses a call runfleet's budget let through (github_limit.go);
//   - waiting for GitHub's budget never uses up an attempt: a create whose
//     JIT registration the budget held back (or GitHub's limit refused)
//     goes back to pending_create with its attempt given back — not an
//     error, not a replacement;
//   - oldest first under GitHub's limit, within a minute: no create
//     registers its runner while another, which began waiting for the
//     budget a minute or more before it did (in the same process, with
//     one App, and held by runfleet's pacing, not by a penalty GitHub
//     imposed), still waits.
//
// At quiescence — faults off (crashes, fault rates, lies), approvals
// through, the world drained (no job running, none a pool could serve
// still queued, no webhook delivery — a redelivery lands up to an hour
// after its event — still on its way; at most 6 hours), then 45 minutes
// more,
// four bootstrap timeouts and 90 reconcile passes; every tenth seed adds a
// 25-hour tail so GitHub's queue limit and record retention play out:
//
//   - no job left queued in GitHub that runfleet could serve: a job that a
//     pool matches and whose latest queued-or-waiting event runfleet
//     acknowledged (2xx) is a queued one — or whose queued delivery
//     GitHub's delivery log holds, which in the model is every job: a job
//     every queued delivery of which failed is recovered from the log by
//     the reconciler (github_deliveries.go; counted as
//     jobs.queued_delivery_all_failed, and failed if left queued);
//   - no machine without a live record, and no runner registered in
//     GitHub without one (P10: a leaked JIT registration);
//   - no live instance that nothing needs beyond its pool's min_idle;
//   - nothing in a transitional state: every live instance is running,
//     and no ledger job is open or waiting for a job GitHub has finished;
//   - a job that failed on a machine the cloud took back was re-run
//     exactly once (GitHub accepted one re-run of it: not none, not two) —
//     its completed recovered from the delivery log if every delivery of
//     it failed — and a job counts as failed by the interruption when its
//     machine was taken back, or destroyed by anything while under a
//     warning runfleet took in (it was doomed); no other job was
//     ever re-run, but for one re-run of a job that failed on its own
//     within its machine's two-minute warning, which the engine cannot
//     tell from an interrupted one (checks.go; a job that failed before
//     the warning and is re-run fails the check); a re-run's attempt is a
//     job like any other, held to the checks above;
//   - GitHub calls per job within budget (budget.go: at most 8 per
//     servable job on average and 60 for any one job; the calls a job
//     costs are those that name it or a runner made for it).
//
// # The scale-set intake
//
// TestSimulationScaleSet adds a runner scale set (Config.ScaleSet;
// actions_*.go) to the same world: 40 % of the jobs target it (runs-on:
// its name) and runfleet serves them from a third pool (max_runners 6)
// fed only by its listener. The listener is the real one
// (internal/listener, under internal/leader's lease), run as serve runs
// it: one task holds the lease, one listens, both on the virtual clock
// (leader.Runtime: Now, Sleep, Go, given by the simulation's scheduler;
// the backoff's jitter from the seed), its lease and its cursor writes
// being crash points like every other store write. A crash kills both
// tasks with the rest; the next process starts a new listener, which
// must resume its stored session or wait out the dead one's.
//
// The Actions service (actions_service.go, actions_session.go) is in
// process, not HTTP: the listener's Client and Session are interfaces
// (listener.ScaleSetClient adapts the HTTP client), and the simulated
// ones answer with the errors internal/github/scaleset returns. Per
// scale set: a message queue (ids ascending, up to 50 events a message,
// each with the statistics of its moment, held until acknowledged; a
// poll answers the first held message after lastMessageId); one session
// at a time (a create while another is live answers 409; a session
// expires 3 minutes after its last poll; a stored id resumes it; a
// deleted session counts as gone); long polls that wait up to 50 s of
// virtual time and end early when a message arrives. GitHub assigns a
// queued job to the scale set as its capacity (the X-ScaleSetMaxCapacity
// of the last poll) allows (JobAssigned), to a runner of that scale set
// only, and reports JobStarted and JobCompleted (with its result, or
// canceled without a runner for a job canceled while queued) into the
// queue of the scale set the runner belongs to; its statistics count
// assigned and running jobs (a taken-back assignment stays counted) and
// its runners. Scale-set runners take no other jobs. The engine's GitHub
// port is wiring's: the real scaleset.RoutedGitHub sends JIT and removal
// for the scale-set pool to the simulated scale set (which registers the
// runner in it, refuses to remove a busy one, and clears an idle holder
// of the name), everything else to REST. GitHub also sends its webhooks
// about the scale set's jobs, under their REST ids, through the usual
// faults.
//
// Its faults, each a seeded chance: 5xx before the effect (4 %) and
// after it (2 %: a message acknowledged, a runner registered, a session
// made that then holds the scale set), slow answers of 5–40 s (3 %), a
// poll that answers the last message again, acknowledged or not (5 %),
// a poll that answers a copy of any message delivered before — late:
// after later messages, after its ack, after its job was canceled or
// completed — with the statistics of now (5 %, issue #36), a job GitHub
// assigned canceled for good 1–30 s later if no runner took it yet (5 %
// of assignments: JobCompleted, canceled, no runner, nothing after),
// an expired queue token (3 % of polls and acks: the client's refresh,
// which finds the session dropped 30 % of the time), a session GitHub
// drops while a poll waits (1 %), an assignment taken back —
// JobCompleted(canceled) then JobAssigned again 1–20 s later, at most
// three times (15 %), and, on 30 % of the seeds, the scale set deleted
// under the listener once no runner of it holds a job (its queue, with
// whatever messages it still holds, its session and its idle runners
// gone; its queued jobs assigned to the new one that EnsureScaleSet
// makes). An ack, a registration or a session call in flight when the
// process dies may still take effect. A job held for approval is not
// modelled for the scale set (approval comes before GitHub assigns it).
//
// Its invariants, beside all the others (which hold for its jobs too:
// one instance per job attempt, max_runners, no busy runner's machine
// destroyed, nothing left running or transitional, no leaked runner or
// machine):
//
//   - never two pollers for one scale set at once: a poll begins only
//     while no other task polls it (GitHub's 409 keeps sessions to one;
//     this checks the listener side, across a crash and its restart);
//   - a restarted listener polls again soon after it can: from the later
//     of the process being up, the dead process's lease expiring, and the
//     scale set's old session being resumable (its id is the one the
//     listener stored) or expired, its first poll begins within 2 minutes
//     (a minute, and one BackoffMax step of the 409 wait) — within 10
//     minutes when an Actions-service fault was injected meanwhile;
//   - at quiescence, no scale-set job left queued — never excused: GitHub
//     holds its messages until runfleet acknowledges them;
//   - the listener acquires only jobs offered (none on github.com);
//   - no machine is made for a job GitHub has finished: once runfleet
//     acknowledged the news that a job finished (its completed webhook
//     answered 2xx; for a scale-set job, the message with its final
//     JobCompleted acknowledged), a machine launched for an instance the
//     ledger made after that moment is a violation
//     (finished_checks.go). TestInvariantsCatchMachinesForFinishedJobs
//     shows it catches a ledger that cannot tell a late copy from news.
//
// Gaps: the HTTP client (token refresh, its own 401 handling, bodies) is
// not in the loop — its wire tests are (scalesettest); the lease has one
// contender (one process at a time; two live replicas are
// internal/leader's and serve's tests); GHES's JobAvailable
// and acquire, runner groups, and the scale set's labels changing are not
// modelled; the session expiry (3 minutes) and re-assignment timings are
// guesses, as GitHub documents neither.
//
// # Scale
//
// Jobs arrive every 25 s on average, sometimes in bursts of 5–15, into a
// linux pool of max_runners 8 (every fourth seed with min_idle 1) and a
// gpu pool of 4, so bursts wait for capacity; jobs run 30 s – 5 min. A
// seed of 50 jobs is 1–2 hours of virtual time and about 0.2 s of CPU;
// seeds run side by side, one per CPU.
//
// TestSimulationServerless runs the same world over the serverless
// adapters — the DynamoDB store, which has no outbox, so an admission and
// its create message are two writes with a crash point between them, and
// the SQS queue — with 15 jobs and pools roomy enough that nobody waits
// for capacity, because each store call is a round trip and SQS's
// visibility timeouts pass in real time (2 s in that run). Delayed sends
// are held on the virtual clock, as SQS would hold them, and handed to SQS
// when due. SQS decides delivery order and message ids, so that run is
// not replayable to the step.
package sim
