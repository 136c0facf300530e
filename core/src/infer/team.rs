//! The threads a run's matrix stages and heads are split across (std only): helper threads
//! that wait for the next piece of work by spinning, and park only after a while without any
//! (as llama.cpp's thread pool does), so that a hand-off costs a cache line's trip rather than a
//! wake-up. A stories15M-shaped token hands work off 49 times; through rayon's `join` that
//! took about a sixth of a two-thread token.
//!
//! One team per process, sized by the last run that asked for more than one thread; runs on
//! several threads take turns with it a split at a time, and a split inside a part runs on the
//! part's thread. Every split computes exact integers in parts that write disjoint words, so
//! who runs which part changes no bit. More threads than cores is slower than fewer: a spinning
//! helper holds a core that the others wait for.

use std::cell::UnsafeCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};
use std::vec::Vec;

/// How long an idle helper spins before it parks.
const SPIN: Duration = Duration::from_micros(200);

/// A piece of work: part i of it, for i below the job's part count.
type Job<'a> = &'a (dyn Fn(usize) + Sync);

struct Shared {
    /// Bumped once per job (after `job` and `parts` are written).
    epoch: AtomicUsize,
    /// The current job, its lifetime erased: valid until every helper has counted itself in
    /// `done` (the caller of [`Team::run`] waits for that before returning).
    job: UnsafeCell<Option<Job<'static>>>,
    parts: AtomicUsize,
    /// Helpers done with the current job (whether or not it had a part for them).
    done: AtomicUsize,
    /// Per helper: parked, or about to park (the caller unparks it after a new job).
    parked: Vec<AtomicBool>,
    panicked: AtomicBool,
    stop: AtomicBool,
}

// SAFETY: `job` is written only by the caller of `Team::run` (one at a time: the team sits
// behind a mutex) before `epoch` is bumped, and read by helpers after they see the bump.
unsafe impl Sync for Shared {}

struct Team {
    shared: Arc<Shared>,
    helpers: Vec<JoinHandle<()>>,
}

impl Team {
    /// A team of `helpers` threads beside the caller's (fewer when the system refuses some).
    fn new(helpers: usize) -> Team {
        let shared = Arc::new(Shared {
            epoch: AtomicUsize::new(0),
            job: UnsafeCell::new(None),
            parts: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            parked: (0..helpers).map(|_| AtomicBool::new(false)).collect(),
            panicked: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        });
        let mut handles = Vec::new();
        for index in 0..helpers {
            let shared = Arc::clone(&shared);
            let spawned = thread::Builder::new()
                .name(std::format!("curta-run-{}", index + 1))
                .spawn(move || help(&shared, index));
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(_) => break,
            }
        }
        Team {
            shared,
            helpers: handles,
        }
    }

    /// Runs parts 0 to `parts` − 1 of `job` (at most one more than the helpers), part 0 on the
    /// calling thread; returns when every part is done. A panic in a helper's part panics here.
    fn run(&self, parts: usize, job: Job) {
        let s = &*self.shared;
        debug_assert!(parts <= self.helpers.len() + 1);
        // SAFETY: no helper reads `job` until the epoch moves, and every helper has counted
        // itself done with the previous job (the wait below), so none is reading it now. The
        // erased lifetime ends before this function returns, after the same wait.
        unsafe {
            *s.job.get() = Some(core::mem::transmute::<Job, Job<'static>>(job));
        }
        s.parts.store(parts, Relaxed);
        s.done.store(0, Relaxed);
        s.epoch.fetch_add(1, SeqCst);
        for (flag, helper) in s.parked.iter().zip(&self.helpers) {
            if flag.load(SeqCst) {
                helper.thread().unpark();
            }
        }
        // The helpers read `job` until they are done: wait for them even when part 0 panics.
        let own = catch_unwind(AssertUnwindSafe(|| part(job, 0)));
        IN_PART.set(false);
        while s.done.load(Acquire) < self.helpers.len() {
            core::hint::spin_loop();
        }
        if let Err(panic) = own {
            std::panic::resume_unwind(panic);
        }
        if s.panicked.swap(false, Relaxed) {
            panic!("a run's helper thread panicked");
        }
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        self.shared.stop.store(true, SeqCst);
        for helper in self.helpers.drain(..) {
            helper.thread().unpark();
            let _ = helper.join();
        }
    }
}

/// A helper's loop: wait for a new epoch (spinning, then parked), run its part, count itself.
fn help(s: &Shared, index: usize) {
    // The epoch the team was made at: a job posted before this thread started is still new.
    let mut seen = 0;
    loop {
        let idle = Instant::now();
        let mut spins = 0u32;
        loop {
            if s.epoch.load(Acquire) != seen || s.stop.load(Relaxed) {
                break;
            }
            spins = spins.wrapping_add(1);
            if spins % 1024 != 0 || idle.elapsed() < SPIN {
                core::hint::spin_loop();
                continue;
            }
            // Announce the park, then look again: a job posted before the announcement is
            // seen here, one posted after it unparks this thread.
            s.parked[index].store(true, SeqCst);
            if s.epoch.load(SeqCst) == seen && !s.stop.load(SeqCst) {
                thread::park();
            }
            s.parked[index].store(false, SeqCst);
        }
        if s.stop.load(Acquire) {
            return;
        }
        seen = s.epoch.load(Acquire);
        if index + 1 < s.parts.load(Relaxed) {
            // SAFETY: the job was written before the epoch this thread saw; the caller keeps
            // it alive until this thread counts itself done below.
            let job = unsafe { (*s.job.get()).expect("a job for this epoch") };
            if catch_unwind(AssertUnwindSafe(|| part(job, index + 1))).is_err() {
                IN_PART.set(false);
                s.panicked.store(true, Relaxed);
            }
        }
        s.done.fetch_add(1, Release);
    }
}

static TEAM: Mutex<Option<Team>> = Mutex::new(None);

/// The team, made (again) for `threads` threads in all when it has another size.
fn sized(team: &mut Option<Team>, threads: usize) -> &Team {
    if team.as_ref().is_none_or(|t| t.helpers.len() + 1 != threads) {
        *team = None;
        *team = Some(Team::new(threads - 1));
    }
    team.as_ref().expect("a team")
}

/// Makes the team for `threads` threads now (when more than one), so that its helpers have
/// started by the first split: a new thread took milliseconds to first run here, which a
/// stories260K run of 15 ms showed.
pub fn prepare(threads: usize) {
    if threads > 1 {
        sized(&mut TEAM.lock().unwrap_or_else(|p| p.into_inner()), threads);
    }
}

std::thread_local! {
    /// Whether this thread is running a part: a split inside a part runs where it is.
    static IN_PART: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// `job(i)` marked as a part ([`IN_PART`]).
fn part(job: Job, i: usize) {
    IN_PART.set(true);
    job(i);
    IN_PART.set(false);
}

/// Runs `f(i, items[i])` for every item, across up to `threads` threads (the calling thread
/// and the process's team of helpers); returns Σ f. With one thread or one item, or inside
/// another split's part, on the calling thread alone.
pub fn sum_parts<T: Send>(
    threads: usize,
    items: Vec<T>,
    f: impl Fn(usize, T) -> i64 + Sync,
) -> i64 {
    let parts = items.len();
    let team = match threads > 1 && parts > 1 && !IN_PART.get() {
        // Runs on other threads take turns, a split at a time. A panic in a part poisons the
        // lock; the team itself is whole again after it.
        true => Some(TEAM.lock().unwrap_or_else(|p| p.into_inner())),
        false => None,
    };
    let Some(mut team) = team else {
        return items
            .into_iter()
            .enumerate()
            .map(|(i, item)| f(i, item))
            .sum();
    };
    let team = sized(&mut team, threads);
    if parts > team.helpers.len() + 1 {
        return items
            .into_iter()
            .enumerate()
            .map(|(i, item)| f(i, item))
            .sum();
    }
    let slots: Vec<Mutex<Option<T>>> = items.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let total = AtomicI64::new(0);
    team.run(parts, &|i| {
        let item = slots[i].lock().ok().and_then(|mut slot| slot.take());
        let item = item.expect("each part's item is taken once");
        total.fetch_add(f(i, item), Relaxed);
    });
    total.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every part runs once with its own item; a panic in any part (the caller's or a
    /// helper's) reaches the caller and leaves the team usable; a team of another size
    /// replaces it.
    #[test]
    fn parts_run_once_each_and_panics_come_back() {
        for threads in [2, 3, 2] {
            for round in 0..200 {
                let items: Vec<i64> = (0..threads as i64).map(|i| i * 1000 + round).collect();
                let ran: Vec<AtomicUsize> = (0..threads).map(|_| AtomicUsize::new(0)).collect();
                let sum = sum_parts(threads, items.clone(), |i, item| {
                    ran[i].fetch_add(1, Relaxed);
                    assert_eq!(item, i as i64 * 1000 + round);
                    item
                });
                assert_eq!(sum, items.iter().sum::<i64>());
                assert!(ran.iter().all(|r| r.load(Relaxed) == 1));
            }
            let caught = std::panic::catch_unwind(|| {
                sum_parts(threads, (0..threads).collect(), |i, _| {
                    assert!(i == 0, "part {i} panics");
                    0
                })
            });
            assert!(caught.is_err(), "{threads} threads: the helper's panic");
            let caught = std::panic::catch_unwind(|| {
                sum_parts(threads, (0..threads).collect(), |i, _| {
                    assert!(i != 0, "part 0 panics");
                    0
                })
            });
            assert!(caught.is_err(), "{threads} threads: the caller's panic");
            let helpers = std::sync::Mutex::new(std::collections::HashSet::new());
            let sum = sum_parts(threads, vec![5; threads], |_, v| {
                helpers.lock().unwrap().insert(thread::current().id());
                v
            });
            assert_eq!(sum, 5 * threads as i64);
            assert_eq!(helpers.lock().unwrap().len(), threads, "one thread a part");
        }
    }
}
