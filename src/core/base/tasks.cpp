// The task runner (base/tasks.hpp).
#include "base/tasks.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace kl {

namespace {
// The check of the caller's callbacks while run_tasks runs tasks on the calling thread.
thread_local const std::function<void()>* caller_poll_hook = nullptr;
}  // namespace

void poll_caller() {
  if (caller_poll_hook) (*caller_poll_hook)();
}

void run_tasks(int ntasks, int workers,
               const std::function<void(int, const std::atomic<bool>&)>& fn,
               const Callbacks& cb, std::atomic<double>* single_gap, double eps) {
  if (ntasks <= 0) return;
  workers = std::max(1, std::min(workers, ntasks));
  double gap0 = -1.0;
  // Progress after `done` tasks: with one task, how far its violation has come down, on a log
  // scale.
  auto fraction = [&](int done_tasks) {
    double frac = static_cast<double>(done_tasks) / ntasks;
    if (ntasks == 1 && single_gap && done_tasks == 0) {
      const double g = single_gap->load();
      if (g > 0 && std::isfinite(g)) {
        if (gap0 < 0) gap0 = std::max(g, 10 * eps);
        frac = std::log(gap0 / std::max(g, eps)) / std::log(gap0 / eps);
        frac = std::min(0.99, std::max(0.0, frac));
      }
    }
    return frac;
  };
  if (workers == 1) {
    std::atomic<bool> stop(false);
    int current = 0;
    auto last = std::chrono::steady_clock::now();
    const std::function<void()> poll = [&]() {
      const auto now = std::chrono::steady_clock::now();
      if (now - last < std::chrono::milliseconds(20)) return;
      last = now;
      cb.check();
      cb.report(fraction(current));
    };
    const std::function<void()>* outer = caller_poll_hook;
    caller_poll_hook = &poll;
    struct Reset {
      const std::function<void()>* old;
      ~Reset() { caller_poll_hook = old; }
    } reset{outer};
    for (current = 0; current < ntasks; ++current) {
      cb.check();
      fn(current, stop);
      cb.report(fraction(current + 1));
    }
    cb.report(1.0);
    return;
  }
  std::atomic<bool> stop(false);
  std::atomic<int> next(0), done(0);
  std::exception_ptr first_error;   // the first failure that is not a reaction to `stop`
  int first_task = ntasks;
  std::mutex m;
  std::condition_variable cv;
  auto worker = [&]() {
    while (!stop.load()) {
      const int t = next.fetch_add(1);
      if (t >= ntasks) break;
      try {
        fn(t, stop);
      } catch (const Interrupted&) {
        // Stopped because of another failure or a user interrupt; reported elsewhere.
      } catch (...) {
        std::lock_guard<std::mutex> lk(m);
        if (t < first_task) {
          first_task = t;
          first_error = std::current_exception();
        }
        stop.store(true);
      }
      {
        std::lock_guard<std::mutex> lk(m);
        done.fetch_add(1);
      }
      cv.notify_one();
    }
  };
  // Joins the workers on every way out of this function.
  struct Joiner {
    std::vector<std::thread> pool;
    std::atomic<bool>* stop;
    ~Joiner() {
      stop->store(true);
      for (auto& th : pool)
        if (th.joinable()) th.join();
    }
  } joiner{{}, &stop};
  std::exception_ptr caller_error;
  try {
    joiner.pool.reserve(workers);
    for (int w = 0; w < workers; ++w) joiner.pool.emplace_back(worker);
    std::unique_lock<std::mutex> lk(m);
    while (done.load() < ntasks && !stop.load()) {
      cv.wait_for(lk, std::chrono::milliseconds(50));
      lk.unlock();
      cb.check();
      cb.report(fraction(done.load()));
      lk.lock();
    }
  } catch (...) {
    // An interrupt or a failure of the caller's callbacks: stop the workers first.
    caller_error = std::current_exception();
    stop.store(true);
  }
  stop.store(true);
  for (auto& th : joiner.pool)
    if (th.joinable()) th.join();
  if (caller_error) std::rethrow_exception(caller_error);
  if (first_error) std::rethrow_exception(first_error);
  if (done.load() < ntasks) throw Interrupted();
  cb.report(1.0);
}

Callbacks stop_only(const std::atomic<bool>& stop) {
  Callbacks c;
  c.interrupted = [&stop]() { return stop.load(); };
  return c;
}

void run_tasks_or_in_order(int ntasks, int workers, int threads,
                           const std::function<void(int, int, const Callbacks&)>& fn,
                           const Callbacks& cb) {
  if (ntasks <= 0) return;
  if (workers <= 1) {
    const double n = static_cast<double>(ntasks);
    for (int t = 0; t < ntasks; ++t) {
      cb.check();
      fn(t, threads, cb.stage(t / n, (t + 1) / n));
    }
    cb.report(1.0);
    return;
  }
  run_tasks(ntasks, workers, [&](int t, const std::atomic<bool>& stop) {
    fn(t, 1, stop_only(stop));
  }, cb);
}

}  // namespace kl
