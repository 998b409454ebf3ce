// Running independent tasks on worker threads while the calling thread keeps answering the
// caller's callbacks (interrupts, progress): the concurrency tool of the SVM solves, the cost
// paths and the cells of a localized fit.
#pragma once

#include <atomic>
#include <functional>

#include "base/common.hpp"

namespace kl {

// Runs tasks 0..n-1 on worker threads while the calling thread polls cb for interrupts and
// reports progress; `fn(task, stop)` must poll stop. Exceptions of a task are rethrown on the
// calling thread (the one of the lowest task index first). With one worker the tasks run on the
// calling thread itself, which the solver's loops then hand back to now and then through
// poll_caller(): the OpenMP threads of a solve are then the caller's own, shared with all its
// other parallel work (OpenMP keeps threads per calling thread, and stops spinning between
// parallel regions once it holds more threads than there are processors).
void run_tasks(int ntasks, int workers, const std::function<void(int, const std::atomic<bool>&)>& fn,
               const Callbacks& cb, std::atomic<double>* single_gap = nullptr, double eps = 1e-3);

// Callbacks for work on a worker thread of run_tasks: the task's stop flag only (the caller's
// own callbacks talk to a single-threaded host and must not be called from a worker).
Callbacks stop_only(const std::atomic<bool>& stop);

// Runs tasks 0..n-1 either side by side or one after another: with workers >= 2 through
// run_tasks, one thread per task and stop-only callbacks; otherwise in order on the calling
// thread, each with `threads` threads and the caller's callbacks staged over its share of the
// progress. `fn(task, threads, callbacks)` must give the same result either way.
void run_tasks_or_in_order(int ntasks, int workers, int threads,
                           const std::function<void(int, int, const Callbacks&)>& fn,
                           const Callbacks& cb);

// Inside a task that run_tasks runs on its calling thread: checks the caller's callbacks for an
// interrupt (throwing Interrupted) and reports progress, at most every few milliseconds. Does
// nothing elsewhere. Never call it inside a parallel region.
void poll_caller();

}  // namespace kl
