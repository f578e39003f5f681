package model

import (
	"sync"
	"sync/atomic"
	"time"
)

// pool is a fixed set of worker goroutines that split a loop with the caller: work is
// cut into eight chunks per worker, handed out through an atomic counter, so a worker
// slowed by other load on the machine takes fewer chunks instead of holding up the rest,
// and the last chunk leaves the others little time idle. The caller waits for the
// chunks, not the workers: one the OS has not run since the loop was posted finds
// nothing left when it gets there.
//
// A decode step is some 150 products of 40-250 µs each (the time to stream one weight
// matrix from memory), separated by microseconds of norms and attention. Waking a
// parked goroutine costs tens of microseconds (a futex wake of its thread), a large
// share of such a product: the second worker would join late or not at all, and the
// step would stream at one core's bandwidth. So between loops a worker spins on its
// job slot for spinWait before it parks, and the caller spins for the workers' last
// chunks before it blocks; a forward pass keeps every worker hot, and an idle engine
// costs no CPU once spinWait has passed.
type pool struct {
	threads int
	mu      sync.Mutex // one loop at a time; workers' scratch is per worker index
	workers []*poolWorker
	closed  bool
}

// poolWorker is one worker goroutine's mailbox.
type poolWorker struct {
	job    atomic.Pointer[poolJob] // the loop to join, set by run, taken by the worker
	parked atomic.Bool             // the worker is (about to be) blocked on wake
	wake   chan struct{}           // one token wakes a parked worker
	quit   atomic.Bool
}

type poolJob struct {
	f      func(worker, lo, hi int)
	units  int
	chunks int
	next   atomic.Int64  // the next chunk to hand out
	done   atomic.Int64  // chunks finished
	fin    chan struct{} // closed when the last chunk finishes
}

// minPoolWork is the work (multiply-adds) below which a loop runs on the caller alone:
// handing it to a worker costs more than it saves.
const minPoolWork = 1 << 15

// spinWait is how long a worker polls for the next loop before parking, and the
// caller for its workers before blocking.
const spinWait = 10 * time.Microsecond

func newPool(threads int) *pool {
	p := &pool{threads: threads}
	for w := 1; w < threads; w++ {
		pw := &poolWorker{wake: make(chan struct{}, 1)}
		p.workers = append(p.workers, pw)
		go pw.loop(w)
	}
	return p
}

// loop runs the worker's jobs until quit.
func (pw *poolWorker) loop(w int) {
	for {
		j := pw.wait()
		if j == nil {
			return
		}
		j.work(w)
	}
}

// wait returns the next job (nil once quit): spinning first, then parked on wake.
func (pw *poolWorker) wait() *poolJob {
	for {
		start := time.Now()
		for spins := 0; ; spins++ {
			if j := pw.job.Swap(nil); j != nil {
				return j
			}
			if pw.quit.Load() {
				return nil
			}
			if spins&63 == 63 && time.Since(start) > spinWait {
				break
			}
			spinPause()
		}
		// Announce the park, then look once more: run stores the job before it reads
		// parked, so either this look sees the job or run sends a wake token.
		pw.parked.Store(true)
		if j := pw.job.Swap(nil); j != nil {
			pw.parked.Store(false)
			return j
		}
		if pw.quit.Load() {
			return nil
		}
		<-pw.wake // a stale token only means one more round of spinning
		pw.parked.Store(false)
	}
}

// post hands j to the worker, waking it if it parked.
func (pw *poolWorker) post(j *poolJob) {
	pw.job.Store(j)
	if pw.parked.Load() {
		select {
		case pw.wake <- struct{}{}:
		default:
		}
	}
}

func (j *poolJob) work(w int) {
	for {
		c := int(j.next.Add(1) - 1)
		if c >= j.chunks {
			return
		}
		j.f(w, c*j.units/j.chunks, (c+1)*j.units/j.chunks)
		if int(j.done.Add(1)) == j.chunks {
			close(j.fin)
		}
	}
}

// run calls f(worker, lo, hi) over disjoint ranges covering [0, units); worker is in
// [0, threads) and no two concurrent calls share one. work (multiply-adds) decides how
// many workers join.
func (p *pool) run(units, work int, f func(worker, lo, hi int)) {
	if units <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	parts := min(p.threads, units, max(1, work/minPoolWork))
	if parts <= 1 || p.closed {
		f(0, 0, units)
		return
	}
	j := &poolJob{f: f, units: units, chunks: min(units, 8*parts), fin: make(chan struct{})}
	for w := 1; w < parts; w++ {
		p.workers[w-1].post(j)
	}
	j.work(0)
	// Wait for the chunks, not for the workers: a worker the OS has not run since the
	// post finds nothing left when it gets to the job, and nobody waits for it.
	start := time.Now()
	for spins := 0; int(j.done.Load()) < j.chunks; spins++ {
		if spins&63 == 63 && time.Since(start) > spinWait {
			<-j.fin
			return
		}
		spinPause()
	}
}

// close stops the workers; later loops run on the caller.
func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		for _, pw := range p.workers {
			pw.quit.Store(true)
			select {
			case pw.wake <- struct{}{}:
			default:
			}
		}
	}
}

// spinPause is one iteration of a spin-wait loop. Deliberately not a PAUSE
// instruction: under KVM, a burst of PAUSEs triggers pause-loop exiting, and the
// hypervisor deschedules the spinning vCPU (measured: decode 3× slower on a loaded
// 2-vCPU guest).
func spinPause() {}
